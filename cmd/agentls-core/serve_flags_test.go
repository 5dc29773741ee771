package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFlags covers what clients pass and what users see on stderr:
// --stdio is accepted (vscode-languageclient and others add it), and by
// default stderr carries warnings only, because editors show a server's
// stderr as errors and the same records reach them as window/logMessage.
func TestServeFlags(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStderr string // substring
		notStderr  string // substring that must be absent
	}{
		// Empty stdin: the session ends without shutdown, exit code 1.
		{[]string{"serve", "--stdio", "--log-file", "-"}, 1, "", "level=INFO"},
		{[]string{"serve", "--log-file", "-", "--stderr-level", "debug"}, 1, "level=", ""},
		{[]string{"serve", "--stderr-level", "loud"}, 2, "loud", ""},
		{[]string{"serve", "--tcp"}, 2, "flag provided but not defined: -tcp", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := mainExit(tt.args, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
			if code != tt.wantCode {
				t.Errorf("mainExit(%q) = %d; want %d\nstderr:\n%s", tt.args, code, tt.wantCode, errOut.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout = %q; want nothing but protocol (none here)", out.String())
			}
			if tt.wantStderr != "" && !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("stderr = %q; want it to contain %q", errOut.String(), tt.wantStderr)
			}
			if tt.notStderr != "" && strings.Contains(errOut.String(), tt.notStderr) {
				t.Errorf("stderr = %q; want no %q", errOut.String(), tt.notStderr)
			}
		})
	}
}

// TestServeLogsToTheUserStateDir: without --log-file the log goes to
// $XDG_STATE_HOME/agentls/agentls.log (a folder no confined program may
// write), and stderr says where.
func TestServeLogsToTheUserStateDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_STATE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	var out, errOut bytes.Buffer
	if code := mainExit([]string{"serve"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut}); code != 1 {
		t.Errorf("exit code %d; want 1 (no shutdown)", code)
	}
	want := filepath.Join(cache, "agentls", "agentls.log")
	b, err := os.ReadFile(want)
	if err != nil || !strings.Contains(string(b), "connection ending") {
		t.Errorf("log file %s: %v\n%s", want, err, b)
	}
	if !strings.Contains(errOut.String(), want) || out.Len() != 0 {
		t.Errorf("stderr %q does not name %s, or stdout is not empty (%q)", errOut.String(), want, out.String())
	}
}
