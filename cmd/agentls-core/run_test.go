package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// startModel serves script and points the environment at it.
func startModel(t *testing.T, script string) *fakemodel.Server {
	t.Helper()
	s, err := fakemodel.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	t.Setenv("OPENAI_BASE_URL", srv.URL())
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	t.Setenv("AGENTLS_MODEL", "fake-model")
	return srv
}

func TestRunCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		script   string
		code     int
		stdout   []string
		stderr   []string
		wantFile string // path=content after the run
		maxTurns string
		absent   []string // in neither stdout nor stderr
	}{
		{
			name:   "ask answered",
			args:   []string{"What does go.mod declare?"},
			script: `[{"toolCalls":[{"name":"read_file","arguments":{"path":"go.mod"}}]},{"text":"It declares **example.com/x**."}]`,
			code:   0,
			stdout: []string{"It declares **example.com/x**."},
			stderr: []string{"→ Read go.mod", "✓ Read go.mod", "completed: completed in", "[2 model calls", "/.agentls/tasks/"},
		},
		{
			name:     "edit with diff",
			args:     []string{"--edit", "--yes", "--validate", "off", "Add a NOTES file"},
			script:   `[{"toolCalls":[{"name":"write_file","arguments":{"path":"NOTES","content":"hello\n"}}]},{"text":"Added NOTES."}]`,
			code:     0,
			stdout:   []string{"Added NOTES.", "+++ b/NOTES", "+hello"},
			wantFile: "NOTES=hello\n",
		},
		{
			name:     "edit without a terminal or --yes is refused",
			args:     []string{"--edit", "--validate", "off", "Add a NOTES file"},
			script:   `[{"toolCalls":[{"name":"write_file","arguments":{"path":"NOTES","content":"hello\n"}}]},{"text":"Could not add NOTES."}]`,
			code:     0,
			stderr:   []string{"! refused: create NOTES (no terminal to ask on; run on a terminal, or pass --yes)"},
			wantFile: "NOTES=",
		},
		{
			name:     "a command without a terminal or --yes is refused",
			args:     []string{"--edit", "--validate", "off", "Make the marker"},
			script:   `[{"toolCalls":[{"name":"run_command","arguments":{"command":"touch marker"}}]},{"text":"Could not."}]`,
			code:     0,
			stderr:   []string{"! refused: run `touch marker`"},
			wantFile: "marker=",
		},
		{
			name:   "turn budget fails",
			args:   []string{"--max-turns", "1", "Where is main?"},
			script: `[{"toolCalls":[{"name":"grep","arguments":{"pattern":"func main"}}]},{"text":"never"}]`,
			code:   1,
			stderr: []string{"failed (turn_budget)"},
		},
		{
			name:   "secrets in the answer and in a tool line are hidden",
			args:   []string{"Print the token"},
			script: `[{"toolCalls":[{"name":"grep","arguments":{"pattern":"ghp_0123456789abcdefABCDEF0123456789abcd"}}]},{"text":"The key is sk-test-secret and the token ghp_0123456789abcdefABCDEF0123456789abcd."}]`,
			code:   0,
			stdout: []string{"The key is [redacted] and the token [redacted]."},
			stderr: []string{"→ Search `[redacted]`", "[redacted]"},
			absent: []string{"sk-test-secret", "ghp_0123456789abcdefABCDEF0123456789abcd"},
		},
		{
			name:   "json result",
			args:   []string{"--json", "Say hi"},
			script: `[{"text":"hi"}]`,
			code:   0,
			stdout: []string{`"status": "completed"`, `"modelCalls": 1`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			startModel(t, tc.script)
			var out, errb bytes.Buffer
			code := mainExit(append([]string{"run", "--workspace", dir}, tc.args...), stdio{in: strings.NewReader(""), out: &out, err: &errb})
			if code != tc.code {
				t.Fatalf("exit %d; want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errb.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, errb.String())
				}
			}
			if strings.Contains(out.String()+errb.String(), "sk-test-secret") {
				t.Errorf("the API key was printed")
			}
			for _, s := range tc.absent {
				if strings.Contains(out.String()+errb.String(), s) {
					t.Errorf("%q was printed:\nstdout: %s\nstderr: %s", s, out.String(), errb.String())
				}
			}
			if tc.wantFile != "" {
				p, want, _ := strings.Cut(tc.wantFile, "=")
				got, err := os.ReadFile(filepath.Join(dir, p))
				if want == "" {
					// The file must not have been made.
					if !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s exists (%q, %v); want it never made", p, got, err)
					}
				} else if err != nil || string(got) != want {
					t.Errorf("%s = %q (%v); want %q", p, got, err, want)
				}
			}
			if tc.name == "json result" {
				var v map[string]any
				if err := json.Unmarshal(out.Bytes(), &v); err != nil {
					t.Errorf("stdout is not one JSON object: %v", err)
				}
			}
		})
	}
}

// TestRunCommandCancelled: a cancel (Ctrl+C) during a running command ends
// the task as cancelled with exit code 130 and kills the command.
func TestRunCommandCancelled(t *testing.T) {
	dir := t.TempDir()
	startModel(t, `[{"toolCalls":[{"name":"run_command","arguments":{"command":"sleep 30"}}]},{"text":"never"}]`)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	var errb lsptest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runRun(ctx, stdio{out: &out, err: &errb}, []string{"--workspace", dir, "--edit", "build it"})
	}()
	// Cancel once the command has started (bounded wait, no fixed sleep).
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errb.String(), "→ Run `sleep 30`") {
		if time.Now().After(deadline) {
			t.Fatalf("command never started: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 130 {
			t.Fatalf("runRun = %v; want exit 130", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not end after the cancel")
	}
}

// TestRunReportSaysNotChecked: from the command line no editor shares
// diagnostics and no language server serves a .txt file, so the report says
// the edited file was not checked, never "no error introduced".
func TestRunReportSaysNotChecked(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("first: todo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startModel(t, `[{"toolCalls":[{"name":"edit_file","arguments":{"path":"notes.txt","old_string":"todo","new_string":"done"}}]},{"text":"Done."}]`)
	var out, errb bytes.Buffer
	code := mainExit([]string{"run", "--workspace", dir, "--edit", "--validate", "off", "Mark it done"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	reports, _ := filepath.Glob(filepath.Join(dir, ".agentls", "tasks", "*.md"))
	if len(reports) != 1 {
		t.Fatalf("reports %v; want one\nstderr: %s", reports, errb.String())
	}
	rep, err := os.ReadFile(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep), "Not checked: no language server reports diagnostics for notes.txt") {
		t.Errorf("the report does not say notes.txt was not checked:\n%s", rep)
	}
	if strings.Contains(string(rep), "No error introduced") {
		t.Errorf("the report claims no error was introduced although nothing checked notes.txt:\n%s", rep)
	}
}

// TestRunShowsMCPStartFailureWhole: an MCP server of the user's settings
// that does not start is shown on stderr with the whole end of its
// stderr, not only the first line.
func TestRunShowsMCPStartFailureWhole(t *testing.T) {
	dir := t.TempDir()
	startModel(t, `[{"text":"Nothing to change."}]`)
	script := `echo "npm warn config" >&2; echo "npm error 404 Not Found - @acme/gh-mcp" >&2; exit 1`
	settings, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"github": map[string]any{"command": "sh", "args": []string{"-c", script}}}})
	var out, errb bytes.Buffer
	code := mainExit([]string{"run", "--workspace", dir, "--edit", "--validate", "off", "--settings", string(settings), "Fix it"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	want := `! MCP: the MCP server "github" did not start: it exited with code 1; its stderr ends with:` + "\n  npm warn config\n  npm error 404 Not Found - @acme/gh-mcp\n"
	if !strings.Contains(errb.String(), want) {
		t.Errorf("stderr lacks the whole failure %q:\n%s", want, errb.String())
	}
}

// TestRunMultiEditWrittenAsShown: on the command line an edit_file call
// with two edits matched against the original text (a→ab, b→c on "a b")
// writes "ab c", and the diff printed is exactly that change.
func TestRunMultiEditWrittenAsShown(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ab.txt"), []byte("a b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startModel(t, `[{"toolCalls":[{"name":"edit_file","arguments":{"path":"ab.txt","edits":[{"old_string":"a","new_string":"ab"},{"old_string":"b","new_string":"c"}]}}]},{"text":"Done."}]`)
	var out, errb bytes.Buffer
	code := mainExit([]string{"run", "--workspace", dir, "--edit", "--yes", "--validate", "off", "Edit ab.txt"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if got, err := os.ReadFile(filepath.Join(dir, "ab.txt")); err != nil || string(got) != "ab c\n" {
		t.Errorf("ab.txt = %q, %v; want %q", got, err, "ab c\n")
	}
	if !strings.Contains(out.String(), "-a b\n+ab c\n") {
		t.Errorf("the diff printed is not the change written:\n%s", out.String())
	}
}
