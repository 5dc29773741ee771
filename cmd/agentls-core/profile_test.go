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
