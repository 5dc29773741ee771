package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestMemoryLimitUserWins: a server sets its soft memory limit unless the
// user set GOMEMLIMIT, whose value the runtime applied at start and which
// stays.
func TestMemoryLimitUserWins(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	for _, tc := range []struct {
		env  string
		want int64
	}{
		{"", serveMemoryLimit},
		{"1GiB", math.MaxInt64 - 1}, // what the runtime had: left as it was
		{"off", math.MaxInt64 - 1},
	} {
		t.Setenv("GOMEMLIMIT", tc.env)
		debug.SetMemoryLimit(math.MaxInt64 - 1)
		limitMemory()
		if got := debug.SetMemoryLimit(-1); got != tc.want {
			t.Errorf("GOMEMLIMIT=%q: limit %d, want %d", tc.env, got, tc.want)
		}
	}
}

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
