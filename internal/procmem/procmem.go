// Package procmem reads the memory a process holds as Linux's /proc
// reports it (the resident set and its peak), for the tests and
// benchmarks that bound or report it. A figure it cannot read fails the
// test: a bound that is not measured proves nothing.
package procmem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Self names this process where a pid is asked for.
const Self = 0

// Peak is the peak resident set (VmHWM) of process pid, in bytes.
func Peak(t testing.TB, pid int) int64 {
	t.Helper()
	return status(t, pid, "VmHWM")
}

// Resident is the resident set (VmRSS) of process pid, in bytes.
func Resident(t testing.TB, pid int) int64 {
	t.Helper()
	return status(t, pid, "VmRSS")
}

// ResetPeak starts a new peak of this process: writing 5 to clear_refs
// sets VmHWM to the resident set of the moment.
func ResetPeak(t testing.TB) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
}

// status reads the field of process pid's status file, a size in kB, in
// bytes.
func status(t testing.TB, pid int, field string) int64 {
	t.Helper()
	path := "/proc/self/status"
	if pid != Self {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s in %s: %v", field, path, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in %s", field, path)
	return 0
}
