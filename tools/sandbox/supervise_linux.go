package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	seccomparch "github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
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
	// The command must not inherit the status pipe: it could forge how it
	// ended (or that namespaces were refused, to get a weaker sandbox).
	syscall.CloseOnExec(3)
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
	// The command's folder and environment: applied only when the command
	// starts, after the confinement below.
	hf := os.NewFile(HandoverFD, "handover")
	if hf == nil {
		return report(Status{ExitCode: -1, Error: "sandbox handover: no pipe"})
	}
	h, err := readHandover(hf)
	hf.Close()
	if err != nil {
		return report(Status{ExitCode: -1, Error: err.Error()})
	}
	// The proxy bridge: taken off the command's inheritance at once.
	var proxyCtrl *os.File
	if p.Proxy {
		syscall.CloseOnExec(ProxyFD)
		if proxyCtrl = os.NewFile(ProxyFD, "proxy"); proxyCtrl == nil {
			return report(Status{ExitCode: -1, Error: "sandbox: proxy bridge: no socket"})
		}
		if !p.Namespaces || !p.Landlock || p.Network {
			// Only a network namespace of its own keeps the command from
			// going around the proxy.
			return report(Status{ExitCode: -1, Error: "sandbox: the network allowlist needs a network namespace"})
		}
	}
	// Processes whose parent dies are re-parented here, not to init, so
	// nothing escapes the sweep below (outside a PID namespace).
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	if p.Namespaces && os.Getpid() != 1 {
		// Mounting here would change the caller's mount namespace.
		return report(Status{ExitCode: -1, Error: "sandbox: namespaces asked for, but this is not a new PID namespace"})
	}
	if p.Namespaces {
		if err := setupMounts(p); err != nil {
			return report(Status{ExitCode: -1, Error: "sandbox: " + err.Error(), Refused: refused(err)})
		}
		if p.Landlock && !p.Network {
			if err := loopbackUp(); err != nil {
				return report(Status{ExitCode: -1, Error: "sandbox: " + err.Error(), Refused: refused(err)})
			}
			if proxyCtrl != nil {
				url, err := startBridge(proxyCtrl)
				if err != nil {
					return report(Status{ExitCode: -1, Error: "sandbox: " + err.Error()})
				}
				h.Env = withProxy(h.Env, url)
			}
		}
	}
	if err := setLimits(p.Limits); err != nil {
		return report(Status{ExitCode: -1, Error: "sandbox: " + err.Error()})
	}
	if p.Landlock {
		dropCapabilities()
		if err := restrict(p); err != nil {
			return report(Status{ExitCode: -1, Error: "sandbox: landlock: " + err.Error()})
		}
		if !p.Network && !p.Namespaces {
			if err := refuseSockets(); err != nil {
				return report(Status{ExitCode: -1, Error: "sandbox: seccomp: " + err.Error()})
			}
		}
	}
	// Confined: enter the command's folder (through the mounts, so
	// relative paths bypass none of them) and hand it its environment.
	if err := os.Chdir(h.Dir); err != nil {
		return report(Status{ExitCode: -1, Error: "sandbox: the command's folder is not in the sandbox: " + err.Error()})
	}
	// argv[0] is an absolute path the runner resolved (LookPath) from
	// folders the workspace cannot write: nothing is searched here.
	proc, err := os.StartProcess(argv[0], argv, &os.ProcAttr{
		Env:   h.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, // stdin: the runner's /dev/null
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return report(Status{ExitCode: -1, Error: err.Error()})
	}
	pid := proc.Pid
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
	ps, err := proc.Wait()
	if err != nil {
		return report(Status{ExitCode: -1, Error: err.Error(), Killed: sweep()})
	}
	st := Status{ExitCode: ps.ExitCode()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal = unix.SignalName(ws.Signal())
	}
	st.Killed = sweep()
	return report(st)
}

// refused: the kernel created the namespaces but refuses what the
// supervisor does in them (a container that forbids mounts in a user
// namespace); the runner then runs the command without namespaces.
func refused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
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

// nativeOnly loads a seccomp filter that refuses (EPERM) every system
// call made through another architecture's entry (32-bit x86 programs on
// x86-64 call socketcall, which the socket rule would not see): the
// filter above checks the native architecture only.
func nativeOnly() error {
	info, err := seccomparch.GetInfo("")
	if err != nil {
		return err
	}
	const archOffset = 4 // struct seccomp_data: nr, arch, ...
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// setupMounts makes the mount namespace private and builds the command's
// view of the file system: an empty /tmp, /run and /dev/shm with the
// policy's writable, visible and read-only paths that live there bound
// back at the same path (a workspace under /tmp stays where it was), the
// session's sockets hidden, p.ReadOnly bind-mounted read-only (a mount
// point cannot be renamed: EBUSY), and a /proc that shows only this PID
// namespace.
func setupMounts(p Policy) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	var masks []string
	for _, m := range replaced {
		if !p.Landlock {
			break // sandbox off: the host's view, only /proc is new
		}
		if fi, err := os.Lstat(m); err == nil && fi.IsDir() {
			masks = append(masks, m)
		}
	}
	// Open what must come back before the folders holding it are replaced.
	type keptPath struct {
		path string
		fd   int
		dir  bool
	}
	var keep []keptPath
	defer func() {
		for _, k := range keep {
			unix.Close(k.fd)
		}
	}()
	want := slices.Concat(p.Writable, p.Visible, p.ReadOnly)
	slices.SortFunc(want, func(a, b string) int { return len(a) - len(b) })
	var kept []string
	for _, w := range want {
		w = filepath.Clean(w)
		if !within(w, masks) || slices.Contains(masks, w) || within(w, kept) {
			continue // not hidden, replaced as a whole, or inside one kept already
		}
		fd, err := unix.Open(w, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // does not exist
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			unix.Close(fd)
			continue
		}
		keep = append(keep, keptPath{w, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR})
		kept = append(kept, w)
	}
	for _, m := range masks {
		mode := "mode=1777"
		if m != "/tmp" && m != "/dev/shm" {
			mode = "mode=755"
		}
		if err := unix.Mount("tmpfs", m, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mode); err != nil {
			return fmt.Errorf("empty %s: %w", m, err)
		}
	}
	for _, k := range keep {
		if err := mountPoint(k.path, k.dir); err != nil {
			return err
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", k.fd), k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s back: %w", k.path, err)
		}
	}
	for _, h := range p.Hide {
		fi, err := os.Lstat(h)
		if err != nil {
			continue // gone with /tmp or /run, or never there
		}
		switch {
		case fi.IsDir():
			err = unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_RDONLY, "mode=755")
		case fi.Mode()&os.ModeSymlink == 0:
			err = unix.Mount("/dev/null", h, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
	}
	for _, r := range p.ReadOnly {
		if err := readOnly(r); err != nil {
			return err
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// mountPoint creates path (a folder, or an empty file when dir is false)
// and the folders above it, in the empty folder that replaced its own.
func mountPoint(path string, dir bool) error {
	d := path
	if !dir {
		d = filepath.Dir(path)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("mount point %s: %w", path, err)
	}
	if dir {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", path, err)
	}
	return f.Close()
}

// readOnly bind-mounts p on itself read-only, if it exists.
func readOnly(p string) error {
	if _, err := os.Lstat(p); err != nil {
		return nil
	}
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", p, err)
	}
	if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("read-only %s: %w", p, err)
	}
	return nil
}

// loopbackUp brings up lo in the supervisor's new network namespace, so a
// command's own local servers (httptest in `go test`) work; nothing else
// is in the namespace: no route leaves it.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// setLimits applies l to the supervisor, so every process the command
// starts inherits it; a limit is never raised above the server's own.
func setLimits(l Limits) error {
	for _, r := range []struct {
		res int
		v   uint64
	}{{unix.RLIMIT_NPROC, l.Procs}, {unix.RLIMIT_DATA, l.DataBytes}, {unix.RLIMIT_FSIZE, l.FileBytes}} {
		if r.v == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.res, &cur); err != nil {
			return fmt.Errorf("getrlimit: %w", err)
		}
		v := min(r.v, cur.Max)
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit: %w", err)
		}
	}
	return nil
}

// refuseSockets is the network rule where namespaces are not available: a
// seccomp filter (github.com/elastic/go-seccomp-bpf, on every thread, so
// every process started later inherits it) refuses socket() for every
// family but AF_UNIX (TCP, UDP, MPTCP, raw, netlink...) and io_uring,
// which can create sockets without socket(). Unix sockets by path and
// abstract ones stay possible: the label says so.
func refuseSockets() error {
	if err := nativeOnly(); err != nil {
		return err
	}
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{
				{
					Action: seccomp.ActionErrno,
					NamesWithCondtions: []seccomp.NameWithConditions{{
						Name:       "socket",
						Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}},
					}},
				},
				{Action: seccomp.ActionErrno, Names: []string{"io_uring_setup"}},
			},
		},
	})
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
// connect or bind unless p.Network or p.Namespaces (then the network
// namespace is the rule).
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
	if p.ABI >= 4 && (p.Network || p.Namespaces) {
		// Allowed, or a network namespace of its own where only lo exists
		// (a command's own local servers work): file system only.
		return cfg.RestrictPaths(rules...)
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
