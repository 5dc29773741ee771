package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/workspace"
)

// nested is a repository whose Go files sit at every depth (A#1 had 17).
func nested() map[string]string {
	files := map[string]string{"main.go": "package main\n\nfunc main() { run() }\n", "README.md": "# demo\n", ".gitignore": "gen/\n", "gen/skip.go": "package gen\n"}
	for i := 0; i < 16; i++ {
		dir := strings.Repeat(fmt.Sprintf("d%d/", i%4), i%5+1)
		files[fmt.Sprintf("%sf%d.go", dir, i)] = fmt.Sprintf("package d\n\nfunc F%d() int { return %d }\n", i, i)
	}
	return files
}

func countLines(text string, suffix string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(l, suffix) && !strings.HasPrefix(l, "(") {
			n++
		}
	}
	return n
}

// TestDiscoveryNeverDependsOnDepth: `find -maxdepth 1` sees one Go
// file; list_files and grep, always recursive, see all 17 (and not the
// gitignored one).
func TestDiscoveryNeverDependsOnDepth(t *testing.T) {
	_, ws := fixture(t, nested())
	r := newReg(t, Env{Workspace: ws})
	find := call(t, r, "run_command", map[string]any{"command": "find . -maxdepth 1 -name '*.go'"})
	if got := strings.Count(find.Text, ".go\n"); got != 1 {
		t.Fatalf("find -maxdepth 1 found %d files; the fixture should hide 16 below: %s", got, find.Text)
	}
	for _, args := range []map[string]any{{"pattern": "*.go"}, {"pattern": "**/*.go"}, {}} {
		res := call(t, r, "list_files", args)
		if got := countLines(res.Text, ".go"); got != 17 {
			t.Errorf("list_files %v listed %d Go files; want 17:\n%s", args, got, res.Text)
		}
		if strings.Contains(res.Text, "gen/skip.go") {
			t.Errorf("list_files %v listed a gitignored file", args)
		}
	}
	res := call(t, r, "grep", map[string]any{"pattern": `^package \w+`, "glob": "*.go"})
	if got := strings.Count(res.Text, ":1: package"); got != 17 {
		t.Errorf("grep found %d package clauses; want 17:\n%s", got, res.Text)
	}
}

// TestGlobSemantics: `**/*.go` and `*.go` both find nested files; a
// pattern that cannot match says so; an empty match says the search was
// recursive.
func TestGlobSemantics(t *testing.T) {
	_, ws := fixture(t, nested())
	r := newReg(t, Env{Workspace: ws})
	tests := []struct {
		args    map[string]any
		want    int
		isError bool
		text    string
	}{
		{map[string]any{"pattern": "**/*.go"}, 17, false, ""},
		{map[string]any{"pattern": "*.go"}, 17, false, ""},
		{map[string]any{"pattern": "*.go", "path": "d1"}, 4, false, ""},
		{map[string]any{"pattern": "d1/**/*.go"}, 4, false, ""},
		{map[string]any{"pattern": "{main,README}.*"}, 2, false, ""},
		{map[string]any{"pattern": "f1[0-5].go"}, 6, false, ""},
		{map[string]any{"pattern": "*.rs"}, 0, false, "no files match"},
		{map[string]any{"pattern": "/etc/*"}, 0, true, "can never match"},
		{map[string]any{"pattern": "../*.go"}, 0, true, "can never match"},
		{map[string]any{"pattern": "[z-a"}, 0, true, "can never match"},
		{map[string]any{"path": "nope"}, 0, true, "no such folder"},
	}
	for _, tt := range tests {
		res := call(t, r, "list_files", tt.args)
		got := countLines(res.Text, ".go") + countLines(res.Text, ".md")
		if got != tt.want || res.IsError != tt.isError || !strings.Contains(res.Text, tt.text) {
			t.Errorf("list_files %v = %d paths, error %v:\n%s\nwant %d paths, error %v, text %q", tt.args, got, res.IsError, res.Text, tt.want, tt.isError, tt.text)
		}
	}
	res := call(t, r, "list_files", map[string]any{"pattern": "*.go", "limit": 5})
	if !strings.Contains(res.Text, "showing 5 of 17") || !strings.Contains(res.Text, "12 more") {
		t.Errorf("capped listing does not say how many more:\n%s", res.Text)
	}
}

// TestPathsAreWorkspaceRelative: every path printed is relative to the
// root, and each one reads back with read_file, given any way.
func TestPathsAreWorkspaceRelative(t *testing.T) {
	dir, ws := fixture(t, nested())
	r := newReg(t, Env{Workspace: ws})
	list := call(t, r, "list_files", map[string]any{})
	var paths []string
	for _, l := range strings.Split(list.Text, "\n") {
		if l != "" && !strings.HasPrefix(l, "(") {
			paths = append(paths, l)
		}
	}
	if len(paths) < 18 {
		t.Fatalf("list_files printed %d paths:\n%s", len(paths), list.Text)
	}
	for _, p := range paths {
		if filepath.IsAbs(p) || strings.HasPrefix(p, "./") || strings.Contains(p, dir) {
			t.Errorf("list_files printed %q: not workspace-relative", p)
		}
		for _, form := range []string{p, "./" + p, filepath.Join(dir, p), "file://" + filepath.Join(dir, p)} {
			res := call(t, r, "read_file", map[string]any{"path": form})
			if res.IsError || !strings.HasPrefix(res.Text, p+" (") {
				t.Errorf("read_file %q (listed as %q) = %s", form, p, res.Text)
			}
		}
	}
	g := call(t, r, "grep", map[string]any{"pattern": "func F1[0-9]"})
	for _, l := range strings.Split(g.Text, "\n") {
		if strings.HasPrefix(l, "/") || strings.Contains(l, dir) {
			t.Errorf("grep printed a non-relative path: %q", l)
		}
	}
	for name, args := range map[string]map[string]any{
		"read_file": {}, "list_files": {}, "grep": {"pattern": "x"}, "write_file": {"content": "x"},
		"edit_file": {"old_string": "a", "new_string": "b"}, "run_command": {"command": "true", "cwd": "../x"},
	} {
		if _, ok := args["cwd"]; !ok {
			args["path"] = "../outside.txt"
		}
		res := call(t, r, name, args)
		if !res.IsError || !strings.Contains(res.Text, "outside") {
			t.Errorf("%s with a path outside the workspace = %q; want an error saying so", name, res.Text)
		}
	}
}

func TestReadFile(t *testing.T) {
	long := strings.Repeat("x", 5000)
	var big strings.Builder
	for i := 1; i <= 300000; i++ {
		fmt.Fprintf(&big, "line %d of a file over the read limit\n", i)
	}
	_, ws := fixture(t, map[string]string{
		"a.txt": "one\r\ntwo\r\nthree\r\n", "long.txt": long + "\n", "bin.dat": "ab\x00cd", "empty.txt": "",
		"big.log": big.String(), "dir/x.go": "package x\n",
	})
	r := newReg(t, Env{Workspace: ws})
	tests := []struct {
		args    map[string]any
		isError bool
		want    []string
	}{
		{map[string]any{"path": "a.txt"}, false, []string{"a.txt (lines 1-3 of 3)", "     2\ttwo\n"}},
		{map[string]any{"path": "a.txt", "offset": 2, "limit": 1}, false, []string{"lines 2-2 of 3; read on with offset=3", "two"}},
		{map[string]any{"path": "a.txt", "offset": 9}, true, []string{"past the end", "3 lines"}},
		{map[string]any{"path": "long.txt"}, false, []string{"line cut: 3000 more bytes"}},
		{map[string]any{"path": "bin.dat"}, true, []string{"binary"}},
		{map[string]any{"path": "empty.txt"}, false, []string{"empty (0 lines"}},
		{map[string]any{"path": "dir"}, true, []string{"is a folder", "list_files"}},
		{map[string]any{"path": "x.go"}, true, []string{"no such file", "dir/x.go"}},
		{map[string]any{"path": "big.log", "offset": 299999}, false, []string{"of 300000", "line 300000 of a file", "read from disk in parts"}},
	}
	for _, tt := range tests {
		res := call(t, r, "read_file", tt.args)
		for _, w := range tt.want {
			if res.IsError != tt.isError || !strings.Contains(res.Text, w) {
				t.Errorf("read_file %v = (error %v) %q; want error %v and %q", tt.args, res.IsError, res.Text, tt.isError, w)
			}
		}
	}
	// The editor's unsaved buffer wins over the disk.
	ws.Buffers().Open(filepath.Join(ws.Roots()[0], "a.txt"), "text", 7, "edited in the editor\n")
	res := call(t, r, "read_file", map[string]any{"file_path": "a.txt"})
	if !strings.Contains(res.Text, "edited in the editor") || !strings.Contains(res.Text, "version 7") {
		t.Errorf("read_file of an open buffer = %q", res.Text)
	}
}

func TestGrepTool(t *testing.T) {
	dir, ws := fixture(t, map[string]string{
		"a.go": "package a\n\nfunc Alpha() {}\nfunc beta() {}\n", "b/b.go": "package b\n\nfunc ALPHA() {}\n",
		"b/notes.md": "alpha notes\n", "bin.dat": "alpha\x00",
	})
	r := newReg(t, Env{Workspace: ws})
	tests := []struct {
		args    map[string]any
		isError bool
		want    []string
		not     []string
	}{
		{map[string]any{"pattern": "func Alpha"}, false, []string{"a.go:3: func Alpha() {}", "1 matching line in 1 file"}, []string{"ALPHA"}},
		{map[string]any{"pattern": "alpha", "ignore_case": true}, false, []string{"a.go:3:", "b/b.go:3:", "b/notes.md:1:", "1 binary file skipped"}, nil},
		{map[string]any{"pattern": "alpha", "ignore_case": true, "glob": "*.go"}, false, []string{"a.go:3:", "b/b.go:3:"}, []string{"notes.md"}},
		{map[string]any{"pattern": "alpha", "ignore_case": true, "path": "b"}, false, []string{"b/b.go:3:", "b/notes.md:1:"}, []string{"a.go:3"}},
		{map[string]any{"pattern": "Alpha()", "literal": true}, false, []string{"a.go:3:"}, nil},
		{map[string]any{"pattern": "zzz"}, false, []string{"no matches for \"zzz\" in 3 files searched in the workspace; 1 binary file skipped"}, nil},
		{map[string]any{"pattern": "a(", "literal": false}, true, []string{"bad pattern", "literal"}, nil},
		{map[string]any{"pattern": "x", "glob": "*.rs"}, true, []string{"nothing was searched"}, nil},
		{map[string]any{"pattern": "beta", "context": 1}, false, []string{"a.go-3- func Alpha() {}", "a.go:4: func beta() {}"}, nil},
	}
	for _, tt := range tests {
		res := call(t, r, "grep", tt.args)
		if res.IsError != tt.isError {
			t.Errorf("grep %v: error %v; want %v: %s", tt.args, res.IsError, tt.isError, res.Text)
		}
		for _, w := range tt.want {
			if !strings.Contains(res.Text, w) {
				t.Errorf("grep %v = %q; want %q in it", tt.args, res.Text, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(res.Text, w) {
				t.Errorf("grep %v = %q; want no %q", tt.args, res.Text, w)
			}
		}
	}
	// Evidence: an empty result names the scope and the file count.
	res := call(t, r, "grep", map[string]any{"pattern": "nothing here"})
	if res.IsError || !strings.Contains(res.Evidence, "3 files searched") {
		t.Errorf("empty grep evidence = %q", res.Evidence)
	}
	// Unsaved buffers are searched.
	ws.Buffers().Open(filepath.Join(dir, "a.go"), "go", 3, "package a\n\nfunc Gamma() {}\n")
	res = call(t, r, "grep", map[string]any{"pattern": "Gamma"})
	if !strings.Contains(res.Text, "a.go:3: func Gamma() {}") {
		t.Errorf("grep did not read the unsaved buffer: %s", res.Text)
	}
}

// TestGrepDoesNotTrustAFilterBuiltBeforeTheFoldersWereWatched: the server
// lists a workspace in the background and watches its folders only once a
// search is over. A filter built before then may hold a file that changed
// with no event for it; the first search once every folder is watched
// checks each file on disk instead of trusting the change log, and finds
// the new text.
func TestGrepDoesNotTrustAFilterBuiltBeforeTheFoldersWereWatched(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 20; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	held, release := make(chan struct{}), make(chan struct{})
	ws, err := workspace.New(context.Background(), workspace.Options{
		Roots: []string{dir}, Watch: true, ListInBackground: true,
		HoldWatches: func(ctx context.Context) {
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	<-held
	if ws.Watching() {
		t.Fatal("watching before the folders were watched")
	}
	r := warmRegistry(t, ws)
	// Another size: the file's stamp moves whatever the clock's tick.
	if err := os.WriteFile(filepath.Join(dir, "f03.txt"), []byte("a narwhal, written before the watch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for !ws.Watching() {
		if time.Now().After(deadline) {
			t.Fatal("the folders were never watched")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := call(t, r, "grep", map[string]any{"pattern": "narwhal", "literal": true}).Text
	if !strings.Contains(got, "f03.txt:1:") {
		t.Errorf("a file changed before its folder was watched was searched by its old filter entry: %s", got)
	}
}

// TestGrepWarmIndexStaysCurrent: once the index is warm, a search never
// misses a change: an edit through the tools, an outside write the watcher
// reports, or a file a command wrote a moment ago.
func TestGrepWarmIndexStaysCurrent(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 50; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{dir}, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if !ws.Watching() {
		t.Skip("no file watching here")
	}
	r := warmRegistry(t, ws)
	find := func(pattern string) string {
		return call(t, r, "grep", map[string]any{"pattern": pattern, "literal": true}).Text
	}
	if got := find("file 7"); !strings.Contains(got, "f07.txt:1:") {
		t.Fatalf("warm search: %s", got)
	}
	call(t, r, "edit_file", map[string]any{"path": "f03.txt", "old_string": "file 3", "new_string": "zebra edited"})
	if got := find("zebra edited"); !strings.Contains(got, "f03.txt:1:") {
		t.Errorf("edit through the tools not seen: %s", got)
	}
	call(t, r, "run_command", map[string]any{"command": "echo giraffe from a command > f04.txt"})
	if got := find("giraffe from a command"); !strings.Contains(got, "f04.txt:1:") {
		t.Errorf("a command's write not seen by the next search: %s", got)
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	os.WriteFile(filepath.Join(dir, "f05.txt"), []byte("okapi from outside\n"), 0o644)
	eventually("an outside write was never seen", func() bool {
		return strings.Contains(find("okapi from outside"), "f05.txt:1:")
	})
	// The whole workspace's file list is kept from one grep to the next
	// while the workspace lists the same files: a file created or deleted
	// outside changes the list, and the next grep sees the new one.
	os.WriteFile(filepath.Join(dir, "f60.txt"), []byte("tapir in a new file\n"), 0o644)
	eventually("a file created outside was never searched", func() bool {
		return strings.Contains(find("tapir in a new file"), "f60.txt:1:")
	})
	os.Remove(filepath.Join(dir, "f06.txt"))
	eventually("a deleted file was still listed", func() bool {
		return strings.Contains(find("file 6"), "no matches")
	})
	// An open buffer is searched instead of the disk, with the list kept.
	ws.Buffers().Open(filepath.Join(dir, "f08.txt"), "text", 1, "ocelot unsaved\n")
	if got := find("ocelot unsaved"); !strings.Contains(got, "f08.txt:1:") {
		t.Errorf("an unsaved buffer was not searched: %s", got)
	}
	if got := find("file 8"); strings.Contains(got, "f08.txt") {
		t.Errorf("the disk text of a file open with other text was searched: %s", got)
	}
}

// TestReadFileShowsDiskChangedUnderCleanBuffer: a command rewrote a file
// the editor has open but unmodified; read_file shows the new disk text,
// not the stale buffer labelled as unsaved changes.
func TestReadFileShowsDiskChangedUnderCleanBuffer(t *testing.T) {
	dir, ws := fixture(t, map[string]string{"a.go": "package a // old\n"})
	ws.Buffers().Open(filepath.Join(dir, "a.go"), "go", 1, "package a // old\n")
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a // sed -i\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newReg(t, Env{Workspace: ws})
	res := call(t, r, "read_file", map[string]any{"path": "a.go"})
	if !strings.Contains(res.Text, "sed -i") || strings.Contains(res.Text, "unsaved changes included") {
		t.Errorf("read_file after the disk changed under a clean buffer:\n%s\nwant the disk text, not the buffer", res.Text)
	}
}

// warmRegistry is a registry on ws whose grep filter is built, by a first
// search.
func warmRegistry(t *testing.T, ws *workspace.Workspace) *Registry {
	t.Helper()
	r := newReg(t, Env{Workspace: ws})
	call(t, r, "grep", map[string]any{"pattern": "warm me up"})
	r.env.Index.Wait()
	if !r.env.Index.Warm() {
		t.Fatal("index not warm after the first search")
	}
	return r
}
