package tools

import (
	"os"
	"runtime"
)

// ReserveProtocolProc gives the process one P more than the cores Go would
// use, unless GOMAXPROCS is set in the environment, and returns what puts
// the old value back. Grep's search and build workers take at most
// GOMAXPROCS-1 Ps: with this they use every core, at low CPU priority,
// and a P is always free for the goroutines that answer the editor, which
// the kernel then runs first. A server calls it once, at start.
func ReserveProtocolProc() (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	return func() { runtime.GOMAXPROCS(prev) }
}
