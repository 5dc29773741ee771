package procmem

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"testing"
)

// hold keeps the pages it touched resident until the test ends.
var hold []byte

// TestPeakFollowsWhatTheProcessTouched: touching 64 MB raises this
// process's resident set and its peak by about that much; the peak never
// falls below the resident set; ResetPeak brings the peak back to the
// resident set of the moment once the pages are given back.
func TestPeakFollowsWhatTheProcessTouched(t *testing.T) {
	const size = 64 << 20
	before := Resident(t, Self)
	hold = make([]byte, size)
	for i := 0; i < len(hold); i += os.Getpagesize() {
		hold[i] = 1
	}
	during, peak := Resident(t, Self), Peak(t, Self)
	if during < before+size/2 || peak < during {
		t.Fatalf("resident %d then %d after touching %d bytes, peak %d; want it up by about %d and the peak at least as high", before, during, size, peak, size)
	}
	hold = nil
	runtime.GC()
	debug.FreeOSMemory()
	ResetPeak(t)
	if after := Peak(t, Self); after >= peak {
		t.Errorf("peak %d after ResetPeak with the pages given back; want under the old peak %d", after, peak)
	}
}

// TestPeakOfAnotherProcess reads a child's peak by its pid.
func TestPeakOfAnotherProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if p := Peak(t, cmd.Process.Pid); p <= 0 {
		t.Errorf("peak of sleep = %d bytes; want more than nothing", p)
	}
}
