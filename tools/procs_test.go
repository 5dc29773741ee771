package tools

import (
	"runtime"
	"testing"

	"github.com/agentls/agentls/tools/grep"
)

// TestReserveProtocolProcKeepsPsBesideTheWorkers: the server gets
// protocolProcs Ps beyond the cores Go chose while grep's workers stay at
// one per core, and restore puts the old count back; a GOMAXPROCS the
// user set is left alone.
func TestReserveProtocolProcKeepsPsBesideTheWorkers(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Setenv("GOMAXPROCS", "")
	restore := ReserveProtocolProc()
	if got := runtime.GOMAXPROCS(0); got != before+protocolProcs {
		t.Errorf("GOMAXPROCS %d after the reservation; want %d", got, before+protocolProcs)
	}
	if got := grep.Workers(); got != before {
		t.Errorf("%d grep workers with %d cores; want one per core", got, before)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after restore; want %d", got, before)
	}
	t.Setenv("GOMAXPROCS", "1")
	defer ReserveProtocolProc()()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("with GOMAXPROCS set by the user, the count changed to %d", got)
	}
}
