package agent

import "testing"

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
	}
	for _, tt := range tests {
		v := parseVerdict(tt.in)
		if v.Pass != tt.pass || v.Unreadable != tt.unreadable || v.Reason != tt.reason {
			t.Errorf("parseVerdict(%q) = %+v; want pass=%v unreadable=%v reason=%q", tt.in, v, tt.pass, tt.unreadable, tt.reason)
		}
	}
}
