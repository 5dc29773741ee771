package workspace

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond every 10 ms until it holds or limit passes, and
// returns how long it took.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: not seen within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func indexed(w *Workspace, name string) bool {
	return slices.Contains(pathStrings(w.Files()), name)
}

func hasChange(w *Workspace, since uint64, name string, kind ChangeKind, origin Origin) bool {
	cs, _ := w.ChangesSince(since)
	for _, c := range cs {
		if c.Path.String() == name && c.Kind == kind && c.Origin == origin {
			return true
		}
	}
	return false
}

// TestWatchReflectsDiskChanges: a file created, changed or deleted on
// disk (by another program) is in the index and the change log within
// 500 ms.
func TestWatchReflectsDiskChanges(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"main.go": "package main\n", ".gitignore": "*.tmp\n"})
	w := newWS(t, Options{Roots: []string{root}, Watch: true})
	const limit = 500 * time.Millisecond

	seq := w.Seq()
	writeTree(t, root, map[string]string{"new.go": "package main\n"})
	took := waitFor(t, limit, "created new.go", func() bool { return indexed(w, "new.go") && hasChange(w, seq, "new.go", Created, OriginOutside) })
	t.Logf("create seen after %v", took)

	seq = w.Seq()
	writeTree(t, root, map[string]string{"new.go": "package main\n\nfunc f() {}\n"})
	took = waitFor(t, limit, "modified new.go", func() bool { return hasChange(w, seq, "new.go", Modified, OriginOutside) })
	t.Logf("change seen after %v", took)

	seq = w.Seq()
	if err := os.Remove(filepath.Join(root, "new.go")); err != nil {
		t.Fatal(err)
	}
	took = waitFor(t, limit, "deleted new.go", func() bool { return !indexed(w, "new.go") && hasChange(w, seq, "new.go", Removed, OriginOutside) })
	t.Logf("delete seen after %v", took)

	// A new folder is watched: files created in it later are seen.
	if err := os.MkdirAll(filepath.Join(root, "pkg", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"pkg/deep/a.go": "package deep\n"})
	waitFor(t, limit, "pkg/deep/a.go", func() bool { return indexed(w, "pkg/deep/a.go") })
	writeTree(t, root, map[string]string{"pkg/deep/b.go": "package deep\n"})
	waitFor(t, limit, "pkg/deep/b.go", func() bool { return indexed(w, "pkg/deep/b.go") })

	// Ignored files stay out; a .gitignore change re-filters.
	writeTree(t, root, map[string]string{"x.tmp": "x"})
	writeTree(t, root, map[string]string{"marker.go": ""})
	waitFor(t, limit, "marker.go", func() bool { return indexed(w, "marker.go") })
	if indexed(w, "x.tmp") {
		t.Errorf("x.tmp indexed despite .gitignore")
	}
	writeTree(t, root, map[string]string{".gitignore": "*.go\n"})
	waitFor(t, limit, ".gitignore applied", func() bool { return !indexed(w, "main.go") && indexed(w, "x.tmp") })

	// Removing a whole folder removes its files.
	writeTree(t, root, map[string]string{".gitignore": ""})
	waitFor(t, limit, "un-ignore", func() bool { return indexed(w, "pkg/deep/a.go") })
	if err := os.RemoveAll(filepath.Join(root, "pkg")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, limit, "pkg removed", func() bool { return !indexed(w, "pkg/deep/a.go") && !indexed(w, "pkg/deep/b.go") })
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchLimitFallsBackToRescan: when no more watches can be added the
// workspace warns once and keeps the index current by rescanning.
func TestWatchLimitFallsBackToRescan(t *testing.T) {
	oldLimit, oldEvery := watchLimit, rescanInterval
	watchLimit, rescanInterval = 2, 50*time.Millisecond
	t.Cleanup(func() { watchLimit, rescanInterval = oldLimit, oldEvery })

	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/x.go": "", "b/y.go": "", "c/z.go": "", "d/w.go": ""})
	var logs syncBuffer
	w := newWS(t, Options{Roots: []string{root}, Watch: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if got := len(w.Files()); got != 4 {
		t.Fatalf("Files() has %d files; want 4", got)
	}
	if !strings.Contains(logs.String(), "rescanned periodically") {
		t.Errorf("no fallback warning in log: %s", logs.String())
	}
	seq := w.Seq()
	writeTree(t, root, map[string]string{"d/new.go": ""})
	waitFor(t, 2*time.Second, "d/new.go by rescan", func() bool { return indexed(w, "d/new.go") && hasChange(w, seq, "d/new.go", Created, OriginOutside) })
	if n := strings.Count(logs.String(), "rescanned periodically"); n != 1 {
		t.Errorf("fallback warned %d times; want once", n)
	}
}
