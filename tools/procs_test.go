package tools

import (
	"runtime"
	"testing"
)

// TestReserveProtocolProcAddsOneP: the server gets one P beyond the cores
// Go chose, and restore puts the old count back; a GOMAXPROCS the user set
// is left alone.
func TestReserveProtocolProcAddsOneP(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Setenv("GOMAXPROCS", "")
	restore := ReserveProtocolProc()
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Errorf("GOMAXPROCS %d after the reservation; want %d", got, before+1)
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
