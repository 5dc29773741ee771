package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestReadText: through a workspace (the open buffer wins over the disk) and
// from disk under a root; a missing file is not an error, no workspace is.
func TestReadText(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("on disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := New(ctx, Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	bufs := NewBuffers()
	wb, err := New(ctx, Options{Roots: []string{dir}, Buffers: bufs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wb.Close() })
	bufs.Open(filepath.Join(dir, "AGENTS.md"), "markdown", 1, "in the editor")
	for _, tc := range []struct {
		name       string
		files      TextReader
		root, path string
		text       string
		exists     bool
		fails      bool
	}{
		{"disk", nil, dir, "AGENTS.md", "on disk", true, false},
		{"disk, missing", nil, dir, "CLAUDE.md", "", false, false},
		{"no workspace", nil, "", "AGENTS.md", "", false, true},
		{"workspace", w, dir, "AGENTS.md", "on disk", true, false},
		{"workspace, missing", w, dir, "CLAUDE.md", "", false, false},
		{"workspace, open buffer", wb, dir, "AGENTS.md", "in the editor", true, false},
		{"workspace, outside", w, dir, "../x", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, exists, err := ReadText(ctx, tc.files, tc.root, tc.path)
			if (err != nil) != tc.fails || text != tc.text || exists != tc.exists {
				t.Errorf("ReadText = %q, %v, %v; want %q, %v, fails %v", text, exists, err, tc.text, tc.exists, tc.fails)
			}
		})
	}
}
