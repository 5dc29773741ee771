package grep

import "sync/atomic"

// rawReads is set by ReadWithoutHandoff.
var rawReads atomic.Bool

// ReadWithoutHandoff makes the searches of this process open, read and
// close files with raw system calls, which the Go scheduler does not see:
// for a one-shot process (agentls tool) that nothing else needs a P from.
//
// The scheduler hands a goroutine's P to another thread when its system
// call lasts longer than sysmon's tick (20 µs), and an open or a read of a
// source file takes about that long: a grep of GOROOT/src made 7,461
// nanosleep and 868 futex calls, 1,135 and 156 with raw calls (strace -c),
// and took 290 against 249 ms of CPU (median of 11 runs). A server keeps the hand-off: there a read that blocks (a file on
// a network file system that stopped answering) would hold its P, and the
// collector's stop-the-world, which waits for every P, would stop the
// editor's requests with it.
func ReadWithoutHandoff() { rawReads.Store(true) }
