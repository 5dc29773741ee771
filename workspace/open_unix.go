//go:build unix

package workspace

import "syscall"

// openNonblock is added to every open of a file agentls reads, so opening
// a named pipe (FIFO) returns at once instead of waiting for a writer
// forever; regular files ignore it.
const openNonblock = syscall.O_NONBLOCK
