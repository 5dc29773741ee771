package agent

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/sandbox"
)

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		in         string
		pass       bool
		unreadable bool
		reason     string
	}{
		{"PASS", true, false, ""},
		{"pass: looks right", true, false, ""},
		{"**PASS**", true, false, ""},
		{"Accepted.", true, false, ""},
		{"FAIL: the test file was not updated", false, false, "the test file was not updated"},
		{"Rejected - nothing was searched", false, false, "nothing was searched"},
		{"FAIL: edits missing in docs", false, false, "edits missing in docs"},
		{"FAILED. dependencies not updated", false, false, "dependencies not updated"},
		{"FAIL", false, false, "the validator rejected the result without a reason"},
		// Model noise is not a rejection: the deterministic gates already
		// passed, so the result stands with a note.
		{`{"verdict":"accept"}`, true, true, `{"verdict":"accept"}`},
		{"", true, true, ""},
		// A reply that reasons first is judged by its last line.
		{"The diff renames every caller.\n\nPASS", true, false, ""},
		{"Looking at the evidence, the test was never run.\n**FAIL: run go test ./...**", false, false, "run go test ./..."},
	}
	for _, tt := range tests {
		v := parseVerdict(tt.in)
		if v.Pass != tt.pass || v.Unreadable != tt.unreadable || v.Reason != tt.reason {
			t.Errorf("parseVerdict(%q) = %+v; want pass=%v unreadable=%v reason=%q", tt.in, v, tt.pass, tt.unreadable, tt.reason)
		}
	}
}

// TestNothingFoundClaims: answers that say a search came up empty
// are recognised (including the A#1 answer "No .go files found"), while an
// answer that describes what code does is not taken for one, so it costs
// no extra model call.
func TestNothingFoundClaims(t *testing.T) {
	tests := []struct {
		answer string
		claim  bool
	}{
		{"No .go files found in the current working directory.", true},
		{"There are no Go files in the repository.", true},
		{"I could not find any callers of Foo.", true},
		{"Foo is not called anywhere.", true},
		{"There are no tests for this package.", true},
		{"There are no usages of Foo.", true},
		{"I searched pkg/. No matches.", true},
		{"`Sum` returns **-1** for an empty list.", false},
		{"It returns 0 when the list of files is empty.", false},
		{"There is no nil check, so a nil map panics.", false},
		{"It returns nil if no match is found in the map.", false},
		{"It returns false when none of the patterns match.", false},
		{"This is not thread-safe: there is no mutex.", false},
		{"It doesn't close the file; there's no defer.", false},
		{"Zero allocations happen in the fast path.", false},
		{"The cache has no expiry, so entries live forever.", false},
	}
	for _, tt := range tests {
		if got := claimsNothing(tt.answer); got != tt.claim {
			t.Errorf("claimsNothing(%q) = %v; want %v", tt.answer, got, tt.claim)
		}
	}
}

// TestShellCheckRunsLikeRunCommand: the configured check command runs
// through tools.Run as run_command does: no API key in its environment, no
// stdin, the sandbox, and a timeout that ends it together with its children.
func TestShellCheckRunsLikeRunCommand(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-check-secret")
	t.Setenv("MY_MODEL_KEY", "custom-check-secret")
	ok, out, err := ShellCheck{
		Dir:       t.TempDir(),
		Command:   `echo "openai=$OPENAI_API_KEY custom=$MY_MODEL_KEY"; cat; echo done`,
		SecretEnv: []string{"MY_MODEL_KEY"},
	}.Check(context.Background())
	if err != nil || !ok {
		t.Fatalf("Check() = %v, %q, %v; want ok", ok, out, err)
	}
	if strings.Contains(out, "secret") || !strings.Contains(out, "openai= custom=") || !strings.Contains(out, "done") {
		t.Errorf("check output = %q; want both keys empty and cat to end at once (stdin closed)", out)
	}
	// The sandbox: the check may not write outside its workspace.
	outside, err := os.MkdirTemp("/var/tmp", "agentls-check-outside-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	if abi, lerr := sandbox.KernelABI(); lerr != nil || abi < 1 {
		t.Logf("THE CHECK'S SANDBOX IS NOT TESTED: %v", lerr)
	} else if ok, out, _ := (ShellCheck{Dir: t.TempDir(), Command: "touch " + outside + "/x"}).Check(context.Background()); ok {
		t.Errorf("the check wrote outside the workspace: %q", out)
	}

	start := time.Now()
	ok, _, err = ShellCheck{Dir: t.TempDir(), Command: "sleep 30 & sleep 30", Timeout: 300 * time.Millisecond}.Check(context.Background())
	if ok || err == nil {
		t.Errorf("a check past its timeout = ok %v, err %v; want a failure", ok, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a check with a 300 ms timeout and a background child took %v; its group was not killed", took)
	}
}
