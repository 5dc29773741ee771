package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mustResolve(t testing.TB, w *Workspace, in string) Path {
	t.Helper()
	p, err := w.Resolve(in)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", in, err)
	}
	return p
}

func mustRead(t testing.TB, w *Workspace, p Path) *File {
	t.Helper()
	f, err := w.ReadFile(context.Background(), p)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", p, err)
	}
	return f
}

func replaceAll(f *File, text string) FileEdit {
	return FileEdit{Path: f.Path, BaseHash: f.Hash, BaseVersion: f.Version, Edits: []TextEdit{{
		Range: Range{End: PositionOf(f.Text, len(f.Text))}, NewText: text,
	}}}
}

func readString(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"plain.txt":  "hello\n",
		"bom.txt":    "\xEF\xBB\xBFwith bom\r\n",
		"crlf.txt":   "a\r\nb\r\n",
		"nul.bin":    "abc\x00def",
		"latin1.txt": "caf\xe9\n",
		"utf16.txt":  "\xFF\xFEh\x00i\x00",
		"big.txt":    strings.Repeat("x", 3000),
		"dir/f.txt":  "",
	})
	w := newWS(t, Options{Roots: []string{root}, MaxFileSize: 2000})
	ctx := context.Background()
	f := mustRead(t, w, mustResolve(t, w, "plain.txt"))
	if f.Text != "hello\n" || f.BOM || f.CRLF || f.FromBuffer || f.Hash != HashText("hello\n") {
		t.Errorf("plain.txt: %+v", f)
	}
	f = mustRead(t, w, mustResolve(t, w, "bom.txt"))
	if f.Text != "with bom\r\n" || !f.BOM || !f.CRLF {
		t.Errorf("bom.txt: %+v", f)
	}
	errTests := []struct {
		name string
		err  error
		msg  string
	}{
		{"nul.bin", ErrBinary, "NUL byte"},
		{"latin1.txt", ErrBinary, "not valid UTF-8"},
		{"utf16.txt", ErrBinary, "UTF-16"},
		{"big.txt", ErrTooLarge, "(3000 bytes)"},
		{"missing.txt", fs.ErrNotExist, "no such file"},
		{"dir", ErrIsDir, "is a directory"},
	}
	for _, tt := range errTests {
		_, err := w.ReadFile(ctx, mustResolve(t, w, tt.name))
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("ReadFile(%s) = %v; want %v mentioning %q and the name", tt.name, err, tt.err, tt.msg)
		}
	}
	if _, err := w.ReadFile(ctx, mustResolve(t, w, "missing.txt")); !errors.Is(err, ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v; want ErrNotExist", err)
	}
	// Buffers first.
	abs := filepath.Join(root, "plain.txt")
	w.Buffers().Open(abs, "plaintext", 7, "unsaved\n")
	f = mustRead(t, w, mustResolve(t, w, "plain.txt"))
	if !f.FromBuffer || f.Version != 7 || f.Text != "unsaved\n" {
		t.Errorf("plain.txt with an open buffer: %+v", f)
	}
}

func TestDiskEditorEdits(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a.go":     "package a\n",
		"crlf.txt": "\xEF\xBB\xBFone\r\ntwo\r\n",
	})
	if err := os.Chmod(filepath.Join(root, "crlf.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := newWS(t, Options{Roots: []string{root}})
	ctx := context.Background()
	ed := w.DiskEditor()

	// CRLF, BOM and permissions kept.
	f := mustRead(t, w, mustResolve(t, w, "crlf.txt"))
	e := FileEdit{Path: f.Path, BaseHash: f.Hash, Edits: []TextEdit{{Range: Range{Start: Position{1, 0}, End: Position{1, 0}}, NewText: "inserted\nlines\n"}}}
	seq := w.Seq()
	if err := ed.Apply(ctx, "task-1", []FileEdit{e}); err != nil {
		t.Fatal(err)
	}
	if got, want := readString(t, filepath.Join(root, "crlf.txt")), "\xEF\xBB\xBFone\r\ninserted\r\nlines\r\ntwo\r\n"; got != want {
		t.Errorf("crlf.txt = %q; want %q", got, want)
	}
	if fi, _ := os.Stat(filepath.Join(root, "crlf.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("crlf.txt mode = %v; want 0600", fi.Mode().Perm())
	}
	if !hasChange(w, seq, "crlf.txt", Modified, OriginAgentls) {
		t.Errorf("edit not recorded as agentls: %v", must(w.ChangesSince(seq)))
	}

	// Stale on disk: refused, file untouched.
	f = mustRead(t, w, mustResolve(t, w, "a.go"))
	writeTree(t, root, map[string]string{"a.go": "package a // changed by the user\n"})
	err := ed.Apply(ctx, "task-1", []FileEdit{replaceAll(f, "package b\n")})
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "file changed since you read it") {
		t.Errorf("Apply on a changed file = %v; want ErrStale", err)
	}
	if got := readString(t, filepath.Join(root, "a.go")); got != "package a // changed by the user\n" {
		t.Errorf("a.go clobbered: %q", got)
	}

	// Create, in a new folder: on disk, in the index, in the log.
	create := FileEdit{Path: mustResolve(t, w, "new/dir/n.go"), Create: true, Edits: []TextEdit{{NewText: "package n\n"}}}
	if err := ed.Apply(ctx, "task-1", []FileEdit{create}); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(root, "new/dir/n.go")); got != "package n\n" {
		t.Errorf("new/dir/n.go = %q", got)
	}
	if !indexed(w, "new/dir/n.go") {
		t.Errorf("created file not in the index")
	}
	if err := ed.Apply(ctx, "task-1", []FileEdit{create}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing file = %v; want fs.ErrExist", err)
	}
}

func must[T any](v T, _ bool) T { return v }

// TestStaleBufferEditRefused: the buffer changes between read and edit ->
// the edit is refused with ErrStale and neither the buffer nor the disk
// changes.
func TestStaleBufferEditRefused(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.go": "package a\n"})
	w := newWS(t, Options{Roots: []string{root}})
	abs := filepath.Join(root, "a.go")
	w.Buffers().Open(abs, "go", 1, "package a\n")
	f := mustRead(t, w, mustResolve(t, w, "a.go"))
	if !f.FromBuffer {
		t.Fatal("not read from the buffer")
	}
	// The user types.
	if err := w.Buffers().Change(abs, 2, []Change{{Text: "package a\n\nfunc userWork() {}\n"}}); err != nil {
		t.Fatal(err)
	}
	err := w.DiskEditor().Apply(context.Background(), "task-1", []FileEdit{replaceAll(f, "package agent\n")})
	if !errors.Is(err, ErrStale) {
		t.Fatalf("Apply after the buffer changed = %v; want ErrStale", err)
	}
	doc, _ := w.Buffers().Get(abs)
	if doc.Version != 2 || doc.Text != "package a\n\nfunc userWork() {}\n" {
		t.Errorf("buffer touched: %+v", doc)
	}
	if got := readString(t, abs); got != "package a\n" {
		t.Errorf("disk touched: %q", got)
	}
	// Re-read: now the buffer differs from the disk, so a disk edit must be
	// refused as unsaved, not written under the editor.
	f = mustRead(t, w, mustResolve(t, w, "a.go"))
	if err := w.DiskEditor().Apply(context.Background(), "task-1", []FileEdit{replaceAll(f, "x")}); !errors.Is(err, ErrUnsaved) {
		t.Errorf("Apply to a dirty buffer = %v; want ErrUnsaved", err)
	}
}

// TestDiskEditorAllOrNone: a stale file refuses the whole set; a write that
// fails mid-way restores the files already written.
func TestDiskEditorAllOrNone(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"1.txt": "one\n", "2.txt": "two\n", "3.txt": "three\n"})
	w := newWS(t, Options{Roots: []string{root}})
	ctx := context.Background()
	var edits []FileEdit
	for _, n := range []string{"1.txt", "2.txt", "3.txt"} {
		edits = append(edits, replaceAll(mustRead(t, w, mustResolve(t, w, n)), "new "+n+"\n"))
	}
	edits = append(edits, FileEdit{Path: mustResolve(t, w, "made/4.txt"), Create: true, Edits: []TextEdit{{NewText: "four\n"}}})
	check := func(when string) {
		t.Helper()
		for n, want := range map[string]string{"1.txt": "one\n", "2.txt": "two\n", "3.txt": "three\n"} {
			if got := readString(t, filepath.Join(root, n)); got != want {
				t.Errorf("%s: %s = %q; want %q", when, n, got, want)
			}
		}
		if _, err := os.Stat(filepath.Join(root, "made")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: made/ exists after a failed edit", when)
		}
	}
	failWrite = func(target string) error {
		if strings.HasSuffix(target, "4.txt") {
			return errors.New("disk full (injected)")
		}
		return nil
	}
	err := w.DiskEditor().Apply(ctx, "t", edits)
	failWrite = nil
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Apply with a failing write = %v", err)
	}
	check("after a failed write")

	writeTree(t, root, map[string]string{"3.txt": "three, edited by the user\n"})
	if err := w.DiskEditor().Apply(ctx, "t", edits); !errors.Is(err, ErrStale) {
		t.Fatalf("Apply with one stale file = %v; want ErrStale", err)
	}
	writeTree(t, root, map[string]string{"3.txt": "three\n"})
	check("after a stale set")
}

// TestChangeTracking: origins and "what changed outside me".
func TestChangeTracking(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.go": "package a\n", "b.go": "package b\n"})
	w := newWS(t, Options{Roots: []string{root}, Watch: true})
	ctx := context.Background()
	pa, pb := mustResolve(t, w, "a.go"), mustResolve(t, w, "b.go")
	start := w.Seq()

	// agentls writes a.go for task-1: not "outside" for task-1.
	if err := w.DiskEditor().Apply(ctx, "task-1", []FileEdit{replaceAll(mustRead(t, w, pa), "package a // 1\n")}); err != nil {
		t.Fatal(err)
	}
	// Someone else writes b.go; wait until the watcher saw it, so the echo
	// of our own write has been processed too.
	writeTree(t, root, map[string]string{"b.go": "package b // outside\n"})
	waitFor(t, 2*time.Second, "b.go change", func() bool { return hasChange(w, start, "b.go", Modified, OriginOutside) })
	if hasChange(w, start, "a.go", Modified, OriginOutside) {
		t.Errorf("agentls's own write recorded as outside: %v", must(w.ChangesSince(start)))
	}
	out, complete := w.ChangedOutside(start, "task-1", pa)
	if len(out) != 0 || !complete {
		t.Errorf("ChangedOutside(a.go) for task-1 = %v, %v; want none", out, complete)
	}
	out, _ = w.ChangedOutside(start, "task-2", pa)
	if len(out) != 1 || out[0].Origin != OriginAgentls || out[0].Label != "task-1" {
		t.Errorf("ChangedOutside(a.go) for task-2 = %v; want task-1's write", out)
	}
	out, _ = w.ChangedOutside(start, "task-1")
	if len(out) != 1 || out[0].Path != pb {
		t.Errorf("ChangedOutside(all) for task-1 = %v; want b.go", out)
	}

	// The editor: didOpen is not a change, didChange is; an edit agentls
	// announced (ExpectEdit, as the LSP Editor does) is agentls's.
	abs := filepath.Join(root, "a.go")
	seq := w.Seq()
	w.Buffers().Open(abs, "go", 1, "package a // 1\n")
	if cs, _ := w.ChangesSince(seq); len(cs) != 0 {
		t.Errorf("didOpen recorded: %v", cs)
	}
	_ = w.Buffers().Change(abs, 2, []Change{{Text: "package a // typed\n"}})
	if !hasChange(w, seq, "a.go", Modified, OriginEditor) {
		t.Errorf("didChange not recorded as editor: %v", must(w.ChangesSince(seq)))
	}
	seq = w.Seq()
	w.ExpectEdit(pa, "package a // via applyEdit\n", "task-3")
	_ = w.Buffers().Change(abs, 3, []Change{{Text: "package a // via applyEdit\n"}})
	if cs, _ := w.ChangesSince(seq); len(cs) != 1 || cs[0].Origin != OriginAgentls || cs[0].Label != "task-3" {
		t.Errorf("announced edit = %v; want one agentls change labelled task-3", cs)
	}
	// The editor saves: the disk now equals the buffer, not a new change.
	seq = w.Seq()
	writeTree(t, root, map[string]string{"a.go": "package a // via applyEdit\n", "c.go": "package c\n"})
	waitFor(t, 2*time.Second, "c.go", func() bool { return indexed(w, "c.go") })
	if hasChange(w, seq, "a.go", Modified, OriginOutside) {
		t.Errorf("editor save recorded as outside: %v", must(w.ChangesSince(seq)))
	}
}

// TestAtomicWriteSurvivesKill kills a child process that keeps rewriting a
// large file through DiskEditor at random moments: the file is always
// entirely the old or the new text, never a mix or a truncation; no
// temporary file is ever left in the tree (only in .agentls/tmp/, which
// git ignores and the next open sweeps), and `git status` shows only the
// rewritten file.
func TestAtomicWriteSurvivesKill(t *testing.T) {
	if dir := os.Getenv("AGENTLS_TEST_KILL_WRITER"); dir != "" {
		killWriterChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	const size = 4 << 20
	a, b := strings.Repeat("a", size-1)+"\n", strings.Repeat("b", size-1)+"\n"
	writeTree(t, dir, map[string]string{"big.txt": a})
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	_, gitErr := exec.LookPath("git")
	if gitErr == nil {
		git("init", "-q")
		git("-c", "user.email=t@t", "-c", "user.name=t", "add", "big.txt")
		git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "big")
	} else {
		t.Logf("git is not installed: git status is not checked (%v)", gitErr)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	seen := map[byte]int{}
	leftInTmp := 0
	for round := 0; round < 6; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAtomicWriteSurvivesKill$")
		cmd.Env = append(os.Environ(), "AGENTLS_TEST_KILL_WRITER="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for a completed write, then for the start of the next one
		// ("w": read done, the write begins), and kill at a random moment
		// within the write.
		buf := make([]byte, 1)
		for wrote := false; ; {
			if _, err := stdout.Read(buf); err != nil {
				t.Fatalf("round %d: child wrote nothing: %v", round, err)
			}
			if buf[0] == '.' {
				wrote = true
			} else if wrote && buf[0] == 'w' {
				break
			}
		}
		time.Sleep(time.Duration(rng.IntN(40000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		seen[readString(t, filepath.Join(dir, "big.txt"))[0]]++
		got := readString(t, filepath.Join(dir, "big.txt"))
		if got != a && got != b {
			t.Fatalf("round %d: big.txt is a mix: %d bytes, starts %q, ends %q", round, len(got), got[:min(10, len(got))], got[max(0, len(got)-10):])
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), tempMarker) {
				t.Errorf("round %d: temporary file %s left in the tree", round, e.Name())
			}
		}
		if tmps, _ := os.ReadDir(filepath.Join(dir, tmpDirName)); len(tmps) > 0 {
			leftInTmp++
		}
		if gitErr == nil {
			if st := git("status", "--porcelain"); st != "" && st != " M big.txt\n" {
				t.Errorf("round %d: git status shows more than big.txt:\n%s", round, st)
			}
		}
	}
	t.Logf("final contents over the rounds: %d times a, %d times b; %d kills left a temporary file in %s", seen['a'], seen['b'], leftInTmp, tmpDirName)
	w := newWS(t, Options{Roots: []string{dir}})
	if got := pathStrings(w.Files()); len(got) != 1 || got[0] != "big.txt" {
		t.Errorf("Files() = %v: leftover temporary files must not be listed", got)
	}
	if tmps, _ := os.ReadDir(filepath.Join(dir, tmpDirName)); len(tmps) > 0 {
		t.Errorf("opening the workspace did not sweep the killed writer's temporary files: %v", tmps)
	}
}

// killWriterChild rewrites big.txt forever, alternating two texts.
func killWriterChild(dir string) {
	w, err := New(context.Background(), Options{Roots: []string{dir}, MaxFileSize: 64 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	size := 4 << 20
	texts := []string{strings.Repeat("a", size-1) + "\n", strings.Repeat("b", size-1) + "\n"}
	p, _ := w.Resolve("big.txt")
	for i := 0; ; i++ {
		f, err := w.ReadFile(context.Background(), p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		next := texts[0]
		if f.Text == texts[0] {
			next = texts[1]
		}
		os.Stdout.WriteString("w") // a write begins
		if err := w.DiskEditor().Apply(context.Background(), "child", []FileEdit{replaceAll(f, next)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Stdout.WriteString(".") // one byte per completed write
	}
}
