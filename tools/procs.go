package tools

import (
	"os"
	"runtime"

	"github.com/agentls/agentls/tools/grep"
)

// protocolProcs is how many Ps the process has beyond its search
// workers: the goroutine that answers the editor, and beside it what two
// tasks run at once on ordinary goroutines (encoding model requests, the
// context gate over tool results) and the collector's own worker. With
// fewer, those fill every P while the workers search, and the answer to
// the editor waits in the run queue for a goroutine to be preempted
// (10 ms at a time).
const protocolProcs = 3

// ReserveProtocolProc gives the process protocolProcs Ps more than the
// cores Go would use, unless GOMAXPROCS is set in the environment, and
// returns what puts the old values back. Grep's search and build workers
// take at most one P per core (grep.LimitWorkers): with this they use
// every core, at low CPU priority, and Ps are left for the goroutines
// that answer the editor, which the kernel then runs first. A server
// calls it once, at start.
func ReserveProtocolProc() (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	cores := runtime.GOMAXPROCS(0)
	grep.LimitWorkers(cores)
	prev := runtime.GOMAXPROCS(cores + protocolProcs)
	return func() {
		runtime.GOMAXPROCS(prev)
		grep.LimitWorkers(0)
	}
}
