//go:build !unix

package tools

import (
	"os"
	"os/exec"
)

func setGroup(cmd *exec.Cmd) {}

// killGroup kills the process only: process groups are a Unix feature.
func killGroup(pid int, hard bool) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

func signalOf(st *os.ProcessState) string { return "" }
