// Package rawsys holds one switch of a process: whether its file system
// calls (the walk's folder reads, the search's opens and reads) go through
// the Go scheduler, as every system call does by default, or are raw, which
// the scheduler does not see.
//
// The scheduler hands a goroutine's P to another thread when its system
// call lasts longer than sysmon's tick (20 µs), and an open, a read of a
// source file or a read of a large folder takes about that long: each
// hand-off wakes a thread (futex) and keeps sysmon polling every 20 µs
// (nanosleep). A one-shot process (agentls tool), which nothing else needs
// a P from, calls WithoutHandoff. A server does not: there a call that
// blocks (a file on a network file system that stopped answering) would
// hold its P, and the collector's stop-the-world, which waits for every P,
// would stop the editor's requests with it.
package rawsys

import "sync/atomic"

var raw atomic.Bool

// WithoutHandoff makes this process's file system calls (those made
// through this package) raw from now on.
func WithoutHandoff() { raw.Store(true) }

// Raw reports whether WithoutHandoff was called.
func Raw() bool { return raw.Load() }

// SetForTest sets the switch and returns a function that sets it back.
func SetForTest(on bool) (restore func()) {
	prev := raw.Swap(on)
	return func() { raw.Store(prev) }
}
