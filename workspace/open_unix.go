//go:build unix

package workspace

import (
	"errors"
	"syscall"
)

// openNonblock is added to every open of a file agentls reads, so opening
// a named pipe (FIFO) returns at once instead of waiting for a writer
// forever; regular files ignore it.
const openNonblock = syscall.O_NONBLOCK

// pidAlive reports whether process pid exists (signal 0 checks without
// sending anything; EPERM means it exists under another user).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
