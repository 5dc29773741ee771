package tools

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process the reaper of its orphaned
// descendants (PR_SET_CHILD_SUBREAPER): a process a command started that
// escapes its supervisor is re-parented to the server, not to init, and
// stays in reach of the sweep. The server calls it once at start.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// ProtectServer prepares the server process for running commands: it
// becomes a subreaper (BecomeSubreaper) and makes itself non-dumpable, so
// its /proc/PID/environ and memory belong to root: a command running as the
// same non-root user cannot read the API key from there even where the
// sandbox's PID namespace is not available. (It also disables core dumps
// of the server and debugger attach by the same user.)
func ProtectServer() error {
	if err := BecomeSubreaper(); err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// nsState: 0 untried or working, 1 refused by the kernel.
var nsState atomic.Int32

func namespacesWork() bool { return nsState.Load() == 0 }
func namespacesFailed()    { nsState.Store(1) }

func namespaceRefused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.EACCES)
}

// setProcAttr: its own session and process group, killed when the server
// dies; with ns,
// process 1 of new PID and mount namespaces, and with ns and newNet of a
// new network namespace (in a user namespace that maps only the current
// user, when not root).
func setProcAttr(cmd *exec.Cmd, supervised, ns, newNet bool) {
	// A session of its own: no controlling terminal, so no command can
	// open /dev/tty and push input into the user's shell (TIOCSTI). As
	// the session leader it also leads its process group.
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if supervised && !ns {
		// Outside a PID namespace the supervisor must live long enough to
		// sweep what the command left: SIGTERM makes it do that and exit.
		attr.Pdeathsig = syscall.SIGTERM
	}
	if ns {
		attr.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		if newNet {
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		if uid := os.Getuid(); uid != 0 {
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
	}
	cmd.SysProcAttr = attr
}

// sweepMarked kills every process whose environment carries the run's
// marker and returns how many. Processes in the supervisor's PID namespace
// are gone already; this reaches those that escaped a supervisor that was
// killed, or commands run without one.
func sweepMarked(runID string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	marker := []byte(runMarker + "=" + runID + "\x00")
	self := os.Getpid()
	n := 0
	for range 20 {
		found := 0
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(append(b, 0), marker) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				found++
				if parentOf(pid) == self {
					// Re-parented to us (we are a subreaper): reap it, or
					// it stays a zombie of the server.
					var ws syscall.WaitStatus
					_, _ = syscall.Wait4(pid, &ws, 0, nil)
				}
			}
		}
		if found == 0 {
			break
		}
		n += found
		ents, _ = os.ReadDir("/proc")
	}
	return n
}

// parentOf is the parent process id of pid from /proc, or 0.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(string(f[1]))
	return pp
}
