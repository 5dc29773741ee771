package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// canSupervise: supervisors exist on Linux only.
const canSupervise = true

// supervise is the supervisor: confine, run argv, kill what is left,
// report on fd 3. Its exit code is 0 when it reported, 126 when it could
// not even do that.
func supervise(args []string) int {
	// First: as process 1 of a PID namespace, signals without a handler
	// are ignored.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	status := os.NewFile(3, "status")
	report := func(st Status) int {
		if status == nil {
			fmt.Fprintln(os.Stderr, "agentls sandbox:", st.Error)
			return 126
		}
		json.NewEncoder(status).Encode(st)
		status.Close()
		return 0
	}
	p, argv, err := parseArgs(args)
	if err != nil {
		return report(Status{ExitCode: -1, Error: err.Error()})
	}
	// Processes whose parent dies are re-parented here, not to init, so
	// nothing escapes the sweep below (outside a PID namespace).
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	if p.Namespaces && os.Getpid() != 1 {
		// Mounting here would change the caller's mount namespace.
		return report(Status{ExitCode: -1, Error: "sandbox: namespaces asked for, but this is not a new PID namespace"})
	}
	if p.Namespaces {
		if err := setupMounts(p.ReadOnly); err != nil {
			return report(Status{ExitCode: -1, Error: "sandbox: " + err.Error()})
		}
	}
	if p.Landlock {
		dropCapabilities()
		if err := restrict(p); err != nil {
			return report(Status{ExitCode: -1, Error: "sandbox: landlock: " + err.Error()})
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return report(Status{ExitCode: -1, Error: err.Error()})
	}
	pid := cmd.Process.Pid
	if status != nil {
		status.Write([]byte{StartedByte})
	}
	var once sync.Once
	go func() {
		// SIGTERM from the server (cancel, timeout) or as parent-death
		// signal: pass it on to everything, then the sweep kills the rest.
		for range sigs {
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			for _, c := range descendants(os.Getpid()) {
				_ = syscall.Kill(c, syscall.SIGTERM)
			}
			once.Do(func() {
				go func() {
					time.Sleep(2 * time.Second)
					n := sweep()
					os.Exit(report(Status{ExitCode: -1, Signal: "SIGKILL", Killed: n}))
				}()
			})
		}
	}()
	_ = cmd.Wait()
	st := Status{ExitCode: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal = unix.SignalName(ws.Signal())
	}
	st.Killed = sweep()
	return report(st)
}

// sweep kills every remaining descendant of this process and reaps them:
// as a subreaper (or PID 1 of a namespace) every orphan becomes our child,
// so walking our children until none is left reaches them all, including
// processes that changed their session or process group.
func sweep() int {
	killed := map[int]bool{}
	for range 100 {
		kids := descendants(os.Getpid())
		if len(kids) == 0 {
			break
		}
		for _, k := range kids {
			if syscall.Kill(k, syscall.SIGKILL) == nil {
				killed[k] = true
			}
		}
		for {
			wpid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if wpid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	for { // reap the last ones
		wpid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if wpid <= 0 || err != nil {
			break
		}
	}
	return len(killed)
}

// descendants lists the live (not zombie) processes below pid, by their
// parent links in /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[n] = pp
	}
	var out []int
	for n := range parent {
		for p, hops := parent[n], 0; p != 0 && hops < 4096; p, hops = parent[p], hops+1 {
			if p == pid {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// setupMounts makes the mount namespace private, mounts a /proc that shows
// only this PID namespace, and bind-mounts readOnly read-only.
func setupMounts(readOnly []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, p := range readOnly {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
	}
	return nil
}

// abiConfigs are the configurations used for each kernel ABI. From ABI 6
// Landlock can also scope signals, but go-landlock restricts each thread
// on its own before ABI 8 (LANDLOCK_RESTRICT_SELF_TSYNC), which makes
// sibling domains: the supervisor could then not signal the command it
// started from another thread. The PID namespace keeps commands from
// signalling the server instead; ABI 6 and 7 add no file or network rights.
var abiConfigs = []landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V5, landlock.V5}

// restrict applies Landlock at exactly p.ABI: reads and execution
// anywhere, writes only below p.Writable and to p.WritableFiles, no TCP
// connect or bind unless p.Network.
func restrict(p Policy) error {
	if p.ABI < 1 || p.ABI >= len(abiConfigs) {
		return fmt.Errorf("unsupported ABI %d", p.ABI)
	}
	cfg := abiConfigs[p.ABI]
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(p.Writable...).IgnoreIfMissing(),
		landlock.RWFiles(p.WritableFiles...).IgnoreIfMissing(),
	}
	if p.ABI >= 5 {
		rules[2] = landlock.RWFiles(p.WritableFiles...).WithIoctlDev().IgnoreIfMissing()
	}
	if p.ABI >= 4 && p.Network {
		return cfg.RestrictPaths(rules...) // file system (and, from ABI 6, scopes) only
	}
	return cfg.Restrict(rules...)
}

// KernelABI is the Landlock ABI version of the running kernel, or an error
// saying why Landlock is not available.
func KernelABI() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
			return 0, errors.New("kernel has no Landlock")
		}
		return 0, fmt.Errorf("landlock: %w", err)
	}
	return min(v, len(abiConfigs)-1), nil
}

// ProtectedPaths are the paths of root commands may read but not write:
// the agentls state folder (settings that widen approvals) and the git
// hooks and config (code git runs later, outside the sandbox).
func ProtectedPaths(root string) []string {
	return []string{filepath.Join(root, ".agentls"), filepath.Join(root, ".git", "hooks"), filepath.Join(root, ".git", "config")}
}

// dangerousCaps are the capabilities a command started by a root server
// loses: what Landlock does not cover (module loading, raw devices and
// sockets, ptrace, mounts, rebooting, the clock, network and system
// administration, setting file capabilities).
var dangerousCaps = []uintptr{
	unix.CAP_SYS_MODULE, unix.CAP_SYS_RAWIO, unix.CAP_SYS_ADMIN, unix.CAP_SYS_BOOT, unix.CAP_SYS_PTRACE,
	unix.CAP_SYS_TIME, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW, unix.CAP_MKNOD, unix.CAP_SETFCAP,
	unix.CAP_MAC_ADMIN, unix.CAP_MAC_OVERRIDE, unix.CAP_AUDIT_CONTROL, unix.CAP_SYSLOG, unix.CAP_BPF,
	unix.CAP_PERFMON, unix.CAP_SYS_NICE, unix.CAP_SYS_RESOURCE, unix.CAP_LINUX_IMMUTABLE, unix.CAP_WAKE_ALARM,
	unix.CAP_BLOCK_SUSPEND, unix.CAP_IPC_LOCK, unix.CAP_KILL, unix.CAP_SYS_PACCT, unix.CAP_SYS_CHROOT,
}

// dropCapabilities removes dangerousCaps from the bounding set, so no
// program the command executes has them. Errors (an unprivileged
// supervisor has none of them) are ignored.
func dropCapabilities() {
	for _, c := range dangerousCaps {
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0)
	}
}
