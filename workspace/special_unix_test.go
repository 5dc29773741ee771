//go:build unix

package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within5s runs f and fails the test if it does not return within 5 s: the
// operations below used to block forever on a named pipe.
func within5s(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked (a named pipe was opened for reading and waits for a writer)", what)
	}
}

// TestNamedPipesNeverBlock: a FIFO in the workspace (even one named
// .gitignore) neither hangs the index build nor a read or an edit; the
// read is refused with a message that says what the file is.
func TestNamedPipesNeverBlock(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.go": "package a\n", "sub/b.go": "package b\n"})
	for _, name := range []string{"fifo", ".gitignore", "sub/.ignore"} {
		if err := syscall.Mkfifo(filepath.Join(root, filepath.FromSlash(name)), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	var w *Workspace
	within5s(t, "New", func() { w = newWS(t, Options{Roots: []string{root}}) })
	if got := strings.Join(pathStrings(w.Files()), " "); got != "a.go sub/b.go" {
		t.Errorf("Files() = %s; want a.go sub/b.go (no named pipes)", got)
	}
	p := mustResolve(t, w, "fifo")
	var err error
	within5s(t, "ReadFile", func() { _, err = w.ReadFile(context.Background(), p) })
	if !errors.Is(err, ErrBinary) || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("ReadFile(fifo) = %v; want ErrBinary naming a named pipe", err)
	}
	within5s(t, "Apply", func() {
		err = w.DiskEditor().Apply(context.Background(), "t", []FileEdit{{Path: p, BaseHash: HashText(""), Edits: []TextEdit{{NewText: "x"}}}})
	})
	if err == nil {
		t.Error("an edit of a named pipe was applied")
	}
}

// TestIndexNeverListsLinksOutside: a symlink to a file outside the root
// is not in the index (so grep never reads through it, and every listed
// path reads back); a link inside is, and a listed file replaced by a link
// to the outside leaves the index.
func TestIndexNeverListsLinksOutside(t *testing.T) {
	tmp := t.TempDir()
	root, out := filepath.Join(tmp, "root"), filepath.Join(tmp, "out")
	writeTree(t, root, map[string]string{"a.go": "package a\n", "b.go": "package b\n"})
	writeTree(t, out, map[string]string{"secret.txt": "secret\n"})
	for link, target := range map[string]string{"link-out": filepath.Join(out, "secret.txt"), "link-rel-out": "../out/secret.txt", "link-in": "a.go"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Skipf("symlink: %v", err)
		}
	}
	w := newWS(t, Options{Roots: []string{root}, Watch: true})
	if got := strings.Join(pathStrings(w.Files()), " "); got != "a.go b.go link-in" {
		t.Errorf("Files() = %s; want a.go b.go link-in", got)
	}
	// b.go becomes a link to the outside: it must leave the index.
	if err := os.Remove(filepath.Join(root, "b.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "secret.txt"), filepath.Join(root, "b.go")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "b.go leaves the index", func() bool { return !indexed(w, "b.go") })
}

// TestPathThroughAFileSaysSo: "a.go/x" when a.go is a file is not
// "no such directory /abs/...": the message names a.go, workspace-relative,
// and creating it is refused without a partial folder.
func TestPathThroughAFileSaysSo(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.go": "package a\n"})
	w := newWS(t, Options{Roots: []string{root}})
	p := mustResolve(t, w, "a.go/x")
	_, err := w.ReadFile(context.Background(), p)
	if !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "a.go is a file, not a folder") || strings.Contains(err.Error(), root) {
		t.Errorf("ReadFile(a.go/x) = %v; want ErrNotExist naming a.go, no absolute path", err)
	}
	err = w.DiskEditor().Apply(context.Background(), "t", []FileEdit{{Path: p, Create: true, Edits: []TextEdit{{NewText: "x"}}}})
	if err == nil || !strings.Contains(err.Error(), "a.go is a file, not a folder") || strings.Contains(err.Error(), root) {
		t.Errorf("create a.go/x = %v; want a refusal naming a.go, no absolute path", err)
	}
}
