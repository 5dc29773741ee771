package toolcmd

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestOneShotCollectsLateUnlessTheUserSaysOtherwise: `agentls tool` runs no
// collector below oneShotMemoryLimit; a user's GOGC or GOMEMLIMIT leaves
// the runtime's settings as they were.
func TestOneShotCollectsLateUnlessTheUserSaysOtherwise(t *testing.T) {
	prevLimit, prevPercent := debug.SetMemoryLimit(-1), debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(prevLimit); debug.SetGCPercent(prevPercent) })
	for _, tc := range []struct {
		gogc, gomemlimit string
		percent          int
		limit            int64
	}{
		{"", "", -1, oneShotMemoryLimit},
		{"200", "", 100, math.MaxInt64 - 1},
		{"", "1GiB", 100, math.MaxInt64 - 1},
	} {
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", tc.gomemlimit)
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64 - 1)
		collectLate()
		if percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); percent != tc.percent || limit != tc.limit {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: GC percent %d, limit %d; want %d, %d", tc.gogc, tc.gomemlimit, percent, limit, tc.percent, tc.limit)
		}
	}
}
