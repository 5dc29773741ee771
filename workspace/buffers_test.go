package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCleanBufferDoesNotHideDiskChanges: a buffer that holds what the disk
// held when it was opened or last saved is clean; when the disk changes
// under it (sed -i, git checkout), reads return the disk. A buffer with the
// user's unsaved text still wins.
func TestCleanBufferDoesNotHideDiskChanges(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.go": "v1\n", "b.go": "disk\n"})
	w := newWS(t, Options{Roots: []string{dir}})
	name := filepath.Join(dir, "a.go")
	p := mustResolve(t, w, "a.go")
	setDisk := func(text string) {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() *File {
		t.Helper()
		f, err := w.ReadFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	w.Buffers().Open(name, "go", 1, "v1\n")
	if f := read(); !f.FromBuffer || f.Text != "v1\n" {
		t.Errorf("clean buffer, disk unchanged: read %q (from buffer %v); want the buffer", f.Text, f.FromBuffer)
	}
	if w.BufferStale(p) {
		t.Error("BufferStale before the disk changed")
	}

	setDisk("v2 by a command\n")
	if f := read(); f.FromBuffer || f.Text != "v2 by a command\n" {
		t.Errorf("clean buffer, disk changed: read %q (from buffer %v); want the disk", f.Text, f.FromBuffer)
	}
	if !w.BufferStale(p) {
		t.Error("BufferStale = false after the disk changed under a clean buffer")
	}

	// The user types: the buffer is dirty and wins over any disk change.
	if err := w.Buffers().Change(name, 2, []Change{{Text: "the user's text\n"}}); err != nil {
		t.Fatal(err)
	}
	setDisk("v3 by a command\n")
	if f := read(); !f.FromBuffer || f.Text != "the user's text\n" {
		t.Errorf("dirty buffer: read %q (from buffer %v); want the user's unsaved text", f.Text, f.FromBuffer)
	}

	// The user saves (didSave): clean again, so the next disk change wins.
	setDisk("the user's text\n")
	w.Buffers().Saved(name)
	setDisk("v4 by a command\n")
	if f := read(); f.FromBuffer || f.Text != "v4 by a command\n" {
		t.Errorf("saved buffer, disk changed: read %q (from buffer %v); want the disk", f.Text, f.FromBuffer)
	}

	// A buffer opened with text the disk never held is unsaved: it wins.
	nameB := filepath.Join(dir, "b.go")
	w.Buffers().Open(nameB, "go", 1, "typed before the server started\n")
	if f := mustRead(t, w, mustResolve(t, w, "b.go")); !f.FromBuffer {
		t.Errorf("buffer opened with unsaved text: read %q from disk; want the buffer", f.Text)
	}
}
