package tools

import (
	"strings"
	"testing"
)

// TestFailingCommandEvidenceKeepsBothStreams: the evidence a validator
// reads of a failed command holds stdout and stderr, head and tail, so a
// test failure printed on stdout is not lost behind a one-line stderr.
func TestFailingCommandEvidenceKeepsBothStreams(t *testing.T) {
	_, ws := fixture(t, nil)
	r := newReg(t, Env{Workspace: ws})
	res := call(t, r, "run_command", map[string]any{"command": "echo '--- FAIL: TestParse'; seq 1 100; echo 'FAIL example.com/x'; echo 'exit status 1' >&2; exit 1"})
	if !res.IsError {
		t.Fatalf("result = %+v; want a failure", res)
	}
	for _, want := range []string{"--- FAIL: TestParse", "FAIL example.com/x", "stdout:", "stderr:", "exit status 1", "lines ..."} {
		if !strings.Contains(res.Evidence, want) {
			t.Errorf("evidence lacks %q:\n%s", want, res.Evidence)
		}
	}
}
