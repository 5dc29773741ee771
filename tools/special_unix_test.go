//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentls/agentls/workspace"
)

// TestNamedPipeNeverHangsATool: a FIFO named by the model is refused at
// once by every tool that reads, and grep over it says nothing was searched
// instead of "no matches".
func TestNamedPipeNeverHangsATool(t *testing.T) {
	dir, ws := fixture(t, map[string]string{"a.go": "package a\n"})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	r := newReg(t, Env{Workspace: ws})
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": "fifo"}, "named pipe"},
		{"edit_file", map[string]any{"path": "fifo", "old_string": "a", "new_string": "b"}, "named pipe"},
		{"write_file", map[string]any{"path": "fifo", "content": "x"}, "named pipe"},
		{"grep", map[string]any{"pattern": "x", "path": "fifo"}, "nothing was searched"},
	}
	for _, tt := range tests {
		done := make(chan Result, 1)
		go func() { done <- call(t, r, tt.tool, tt.args) }()
		select {
		case res := <-done:
			if !res.IsError || !strings.Contains(res.Text, tt.want) || strings.Contains(res.Text, dir) {
				t.Errorf("%s %v = %q (error %v); want an error saying %q, no absolute path", tt.tool, tt.args, res.Text, res.IsError, tt.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s %v blocked on a named pipe", tt.tool, tt.args)
		}
	}
}

// TestGrepNeverReadsThroughALinkOutside: a symlink in the workspace to a
// file outside it is neither listed nor searched, and reading it is refused.
func TestGrepNeverReadsThroughALinkOutside(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "secret.txt"), []byte("password=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "secret.txt"), filepath.Join(dir, "notes.txt")); err != nil {
		t.Skipf("symlink: %v", err)
	}
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r := newReg(t, Env{Workspace: ws})
	if res := call(t, r, "grep", map[string]any{"pattern": "hunter2"}); strings.Contains(res.Text, "password=") {
		t.Errorf("grep read a file outside the workspace through a symlink: %s", res.Text)
	}
	if res := call(t, r, "list_files", map[string]any{}); strings.Contains(res.Text, "notes.txt") {
		t.Errorf("list_files lists a link to outside the workspace: %s", res.Text)
	}
	if res := call(t, r, "read_file", map[string]any{"path": "notes.txt"}); !res.IsError || strings.Contains(res.Text, "password=") {
		t.Errorf("read_file through a link outside = %s", res.Text)
	}
}
