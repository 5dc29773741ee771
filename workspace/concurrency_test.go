package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// appendLine is an edit that adds line at the end of f.
func appendLine(f *File, line string) FileEdit {
	end := PositionOf(f.Text, len(f.Text))
	return FileEdit{Path: f.Path, BaseHash: f.Hash, Edits: []TextEdit{{Range: Range{Start: end, End: end}, NewText: line + "\n"}}}
}

// TestConcurrentEditsAreNeverLost runs 8 writers making 1,000 edits in all
// to one file: each edit is either in the final file or was refused with
// ErrStale, never reported applied and then overwritten.
func TestConcurrentEditsAreNeverLost(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"shared.txt": "start\n"})
	w := newWS(t, Options{Roots: []string{dir}})
	p := mustResolve(t, w, "shared.txt")
	const writers, total = 8, 1000
	var mu sync.Mutex
	var applied []string
	refused := 0
	var wg sync.WaitGroup
	for id := 0; id < writers; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < total/writers; i++ {
				line := fmt.Sprintf("writer %d edit %d", id, i)
				f, err := w.ReadFile(context.Background(), p)
				if err != nil {
					t.Error(err)
					return
				}
				err = w.DiskEditor().Apply(context.Background(), fmt.Sprint("task", id), []FileEdit{appendLine(f, line)})
				mu.Lock()
				switch {
				case err == nil:
					applied = append(applied, line)
				case errors.Is(err, ErrStale) && strings.Contains(err.Error(), "file changed since you read it"):
					refused++
				default:
					t.Errorf("Apply: %v; want nil or ErrStale", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	final := readString(t, filepath.Join(dir, "shared.txt"))
	lost := 0
	for _, line := range applied {
		if !strings.Contains(final, line+"\n") {
			lost++
		}
	}
	t.Logf("%d edits: %d applied, %d refused as stale, %d lost", total, len(applied), refused, lost)
	if lost != 0 {
		t.Errorf("%d edits reported applied are missing from the file", lost)
	}
	if got := strings.Count(final, "\n") - 1; got != len(applied) {
		t.Errorf("the file holds %d added lines; %d edits were reported applied", got, len(applied))
	}
	if len(applied)+refused != total {
		t.Errorf("%d applied + %d refused != %d", len(applied), refused, total)
	}
}

// TestWriteBetweenCheckAndRenameIsNotLost: another program saves the file
// after Apply checked it and wrote its temporary file, right before the
// rename. The last check sees it: the edit is refused as stale and the
// other program's save stays on disk.
func TestWriteBetweenCheckAndRenameIsNotLost(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\n"})
	w := newWS(t, Options{Roots: []string{dir}})
	f := mustRead(t, w, mustResolve(t, w, "a.txt"))
	target := filepath.Join(dir, "a.txt")
	beforeRename = func(string) {
		if err := os.WriteFile(target, []byte("the user's save\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeRename = nil }()
	err := w.DiskEditor().Apply(context.Background(), "t", []FileEdit{replaceAll(f, "agent\n")})
	if !errors.Is(err, ErrStale) {
		t.Fatalf("Apply with a save before the rename = %v; want ErrStale", err)
	}
	if got := readString(t, target); got != "the user's save\n" {
		t.Errorf("a.txt = %q; the user's save was lost", got)
	}
	// A file created meanwhile is not replaced by a create either.
	newFile := filepath.Join(dir, "new.txt")
	beforeRename = func(string) { _ = os.WriteFile(newFile, []byte("theirs\n"), 0o644) }
	p := mustResolve(t, w, "new.txt")
	err = w.DiskEditor().Apply(context.Background(), "t", []FileEdit{{Path: p, Create: true, Edits: []TextEdit{{NewText: "ours\n"}}}})
	if !errors.Is(err, ErrStale) || readString(t, newFile) != "theirs\n" {
		t.Errorf("create racing another program's create = %v, file %q; want ErrStale and theirs", err, readString(t, newFile))
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, tmpDirName)); len(ents) != 0 {
		t.Errorf("temporary files left after refused writes: %v", ents)
	}
}

// TestTemporaryFilesStayInStateDir: an atomic write leaves nothing beside
// the file, and its temporary file lives in .agentls/tmp/, which a
// .gitignore keeps out of git.
func TestTemporaryFilesStayInStateDir(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\n"})
	w := newWS(t, Options{Roots: []string{dir}})
	var seen []string
	beforeRename = func(string) {
		ents, _ := os.ReadDir(filepath.Join(dir, tmpDirName))
		for _, e := range ents {
			seen = append(seen, e.Name())
		}
	}
	defer func() { beforeRename = nil }()
	f := mustRead(t, w, mustResolve(t, w, "a.txt"))
	if err := w.DiskEditor().Apply(context.Background(), "t", []FileEdit{replaceAll(f, "two\n")}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "a.txt"+tempMarker) {
		t.Errorf("temporary files during the write: %v; want one a.txt%s* in %s", seen, tempMarker, tmpDirName)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".agentls a.txt" {
		t.Errorf("root holds %v; want only .agentls and a.txt", names)
	}
	if got := readString(t, filepath.Join(dir, StateDirName, ".gitignore")); !strings.Contains(got, "\n*\n") {
		t.Errorf(".agentls/.gitignore = %q; want it to ignore everything", got)
	}
}

// TestStaleTemporaryFilesAreSweptAtOpen: temporary files of a process
// that is gone are removed when a workspace opens; those of a live one
// (another agentls writing) are kept.
func TestStaleTemporaryFilesAreSweptAtOpen(t *testing.T) {
	dir := t.TempDir()
	dead := "a.txt" + tempMarker + "999999999-x1"
	live := "b.txt" + tempMarker + fmt.Sprint(os.Getppid()) + "-x2"
	writeTree(t, dir, map[string]string{
		"a.txt": "a\n", tmpDirName + "/" + dead: "partial", tmpDirName + "/" + live: "in flight",
	})
	newWS(t, Options{Roots: []string{dir}})
	if _, err := os.Stat(filepath.Join(dir, tmpDirName, dead)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead process's temporary file was not swept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, tmpDirName, live)); err != nil {
		t.Errorf("a live process's temporary file was removed: %v", err)
	}
}

// TestUserSavingEvery10msLosesNoSave: another program (an editor without
// the file open through LSP) saves the file every 10 ms, 66 times, by
// truncating and rewriting it, while the agent keeps editing it. Before
// each save the user checks their previous save is still on disk; at the
// end the last one must be. The agent's edits that raced a save are
// refused as stale.
func TestUserSavingEvery10msLosesNoSave(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "notes.txt")
	writeTree(t, dir, map[string]string{"notes.txt": "user: 0\n"})
	w := newWS(t, Options{Roots: []string{dir}})
	p := mustResolve(t, w, "notes.txt")
	const saves = 66
	var done atomicBool
	var wg sync.WaitGroup
	var mu sync.Mutex // guards applied and refused
	applied, refused := 0, 0
	var appliedAtLastSave counter
	wg.Add(1)
	go func() { // the agent
		defer wg.Done()
		for i := 0; !done.get(); i++ {
			f, err := w.ReadFile(context.Background(), p)
			if err != nil {
				continue
			}
			err = w.DiskEditor().Apply(context.Background(), "agent", []FileEdit{appendLine(f, fmt.Sprint("agent ", i))})
			mu.Lock()
			switch {
			case err == nil:
				applied++
			case errors.Is(err, ErrStale):
				refused++
			default:
				t.Errorf("Apply: %v", err)
			}
			mu.Unlock()
		}
	}()
	lost := 0
	for n := 1; n <= saves; n++ {
		time.Sleep(10 * time.Millisecond)
		if got, _ := os.ReadFile(name); !strings.HasPrefix(string(got), fmt.Sprintf("user: %d\n", n-1)) {
			lost++
			t.Logf("before save %d the file holds %q: save %d was lost", n, firstLine(string(got)), n-1)
		}
		if err := os.WriteFile(name, []byte(fmt.Sprintf("user: %d\n", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	appliedAtLastSave.set(applied)
	mu.Unlock()
	// Let the agent make at least one more edit after the last save (on a
	// loaded machine every edit during the saves may have been refused).
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := applied
		mu.Unlock()
		if n > appliedAtLastSave.get() {
			break
		}
	}
	done.set()
	wg.Wait()
	if got := readString(t, name); !strings.HasPrefix(got, fmt.Sprintf("user: %d\n", saves)) {
		lost++
		t.Logf("at the end the file holds %q: the last save was lost", firstLine(got))
	}
	t.Logf("%d saves every 10 ms: %d lost; the agent's edits: %d applied during the saves, %d in all, %d refused as stale", saves, lost, appliedAtLastSave.get(), applied, refused)
	if lost != 0 {
		t.Errorf("%d of %d saves were lost", lost, saves)
	}
	if applied == 0 {
		t.Errorf("the agent made %d edits (%d applied): the race did not run", applied+refused, applied)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) get() int  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }
func (c *counter) set(n int) { c.mu.Lock(); c.n = n; c.mu.Unlock() }

type atomicBool struct {
	mu sync.Mutex
	v  bool
}

func (b *atomicBool) get() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.v }
func (b *atomicBool) set()      { b.mu.Lock(); b.v = true; b.mu.Unlock() }
