package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPIKeyNeverWrittenEvenWhenTheModelQuotesIt: the workspace's .env holds
// the API key, the model reads it and repeats it in its answer. The key may
// reach the terminal only through the answer the user asked for, never any
// file agentls writes: the session database (and its WAL), the task report,
// the flight recording, command logs.
func TestAPIKeyNeverWrittenEvenWhenTheModelQuotesIt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("OPENAI_API_KEY=sk-test-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startModel(t, `[
		{"toolCalls":[{"name":"read_file","arguments":{"path":".env"}}]},
		{"toolCalls":[{"name":"grep","arguments":{"pattern":"sk-test-secret"}}]},
		{"text":"The key in .env is sk-test-secret."}
	]`)
	var out, errb bytes.Buffer
	if code := mainExit([]string{"run", "--workspace", dir, "What key is in .env?"}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != 0 {
		t.Fatalf("exit %d; want 0\nstderr: %s", code, errb.String())
	}
	written := 0
	err := filepath.WalkDir(filepath.Join(dir, ".agentls"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		written++
		if bytes.Contains(b, []byte("sk-test-secret")) {
			t.Errorf("%s holds the API key", strings.TrimPrefix(path, dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if written < 3 { // database, report, recording at least
		t.Fatalf("only %d files under .agentls; the test looked at nothing", written)
	}
	if !strings.Contains(out.String(), "[redacted]") && !strings.Contains(out.String(), "sk-test-secret") {
		t.Errorf("stdout lacks the answer:\n%s", out.String())
	}
}
