package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestReadAfterCommandIgnoresALateReload: a.go is open and clean;
// commands rewrite it twice. Reads return the disk each time,
// also after the editor's watcher, running behind, reloads the buffer with
// the first command's text once the second has written its own: a text the
// disk held is clean, never the user's.
func TestReadAfterCommandIgnoresALateReload(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.go": "v1\n"})
	w := newWS(t, Options{Roots: []string{dir}, Watch: true})
	ctx := context.Background()
	name := filepath.Join(dir, "a.go")
	p := mustResolve(t, w, "a.go")
	command := func(text string) {
		t.Helper()
		run := w.StartCommand(ctx, "task-1")
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		run.End(ctx)
	}
	read := func(want string) {
		t.Helper()
		f, err := w.ReadFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if f.Text != want {
			t.Errorf("read %q (from buffer %v); want %q", f.Text, f.FromBuffer, want)
		}
	}
	w.Buffers().Open(name, "go", 1, "v1\n")
	command("v2 by the first command\n")
	read("v2 by the first command\n")
	command("v3 by the second command\n")
	if err := w.Buffers().Change(name, 2, []Change{{Text: "v2 by the first command\n"}}); err != nil {
		t.Fatal(err) // the late reload
	}
	read("v3 by the second command\n")
	if !w.BufferStale(p) {
		t.Error("BufferStale = false for a buffer reloaded with an earlier disk text")
	}

	// The user types: the buffer is theirs and wins.
	if err := w.Buffers().Change(name, 3, []Change{{Text: "the user's text\n"}}); err != nil {
		t.Fatal(err)
	}
	command("v4 by a third command\n")
	read("the user's text\n")
}
