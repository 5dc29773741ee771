//go:build unix

package tools

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setGroup makes the command the leader of its own session and process
// group, so it and every process it starts can be signalled at once, and
// it has no controlling terminal to push input into (TIOCSTI).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// killGroup signals the process group led by pid: SIGKILL when hard, else
// SIGTERM.
func killGroup(pid int, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}

// signalOf names the signal that killed the process, or "".
func signalOf(st *os.ProcessState) string {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	if name := unix.SignalName(ws.Signal()); name != "" {
		return name
	}
	return ws.Signal().String()
}
