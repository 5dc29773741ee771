package grep

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// lowerPriority runs the calling goroutine, until it returns, on an OS
// thread of its own at a lower CPU priority (nice +10): when the cores are
// busy, the protocol's goroutines (an editor's code action, a progress
// report) run before a search's or a build's workers. The thread is never
// unlocked, so it ends with the goroutine and no other goroutine inherits
// the priority.
func lowerPriority() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 10)
}
