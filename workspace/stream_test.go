package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestStreamFilesGivesTheListBeforeTheWalkEnds: with the list made in the
// background, New returns while the walk is held in one folder; Files and
// Glob wait for it, StreamFiles hands out the files of the folders read so
// far at once, and once the walk is over the streamed files are exactly
// the list (each once) that a workspace listed before New returned has:
// the same ignore files, excludes, links inside kept and links outside or
// to folders left out.
func TestStreamFilesGivesTheListBeforeTheWalkEnds(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	writeTree(t, root, map[string]string{
		"a.go":                 "",
		".gitignore":           "*.log\n/build/\n!keep.log\n",
		"debug.log":            "",
		"keep.log":             "",
		"build/out.go":         "",
		"node_modules/m/m.js":  "",
		".git/config":          "",
		"early/e.go":           "",
		"held/h.go":            "",
		"held/deeper/d.go":     "",
		"held/.ignore":         "skip.txt\n",
		"held/skip.txt":        "",
		"sub/.gitignore":       "gen/\n",
		"sub/gen/g.go":         "",
		"sub/s.go":             "",
		"x.agentls-tmp-1-2":    "",
		".agentls/tasks/t1.md": "",
	})
	writeTree(t, tmp, map[string]string{"outside/o.txt": ""})
	for name, target := range map[string]string{
		"alias.go":       "a.go",
		"held/back.go":   "../sub/s.go",
		"escape.txt":     "../outside/o.txt",
		"linkdir":        "../outside",
		"dangling.txt":   "missing",
		"early/abs.link": filepath.Join(tmp, "outside", "o.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	listed := newWS(t, Options{Roots: []string{root}})
	want := pathStrings(listed.Files())

	release := make(chan struct{})
	ws := newWS(t, Options{Roots: []string{root}, ListInBackground: true, WalkHook: func(dir string) {
		if dir == "held" {
			<-release
		}
	}})
	var mu sync.Mutex
	var got []string
	early := make(chan struct{})
	var once sync.Once
	done := make(chan error)
	go func() {
		done <- ws.StreamFiles(context.Background(), func(ps []Path) {
			mu.Lock()
			got = append(got, pathStrings(ps)...)
			if slices.Contains(got, "early/e.go") {
				once.Do(func() { close(early) })
			}
			mu.Unlock()
		})
	}()
	<-early // a folder's files, while the walk is held in another
	if ws.Listed() {
		t.Fatal("the walk is over while held in a folder")
	}
	mu.Lock()
	for _, f := range got {
		if strings.HasPrefix(f, "held/") {
			t.Errorf("streamed %s before its folder was read", f)
		}
	}
	mu.Unlock()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !ws.Listed() {
		t.Error("the stream ended before the walk")
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("streamed %q\nlisted   %q", got, want)
	}
	if files := pathStrings(ws.Files()); !slices.Equal(files, want) {
		t.Errorf("Files after the walk %q; want %q", files, want)
	}
	// Once listed, a stream is the whole list at once.
	var again []string
	if err := ws.StreamFiles(context.Background(), func(ps []Path) { again = append(again, pathStrings(ps)...) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again, want) {
		t.Errorf("a stream after the walk %q; want %q", again, want)
	}
	for _, bad := range []string{"debug.log", "build/out.go", "node_modules/m/m.js", ".git/config", "held/skip.txt", "sub/gen/g.go", "escape.txt", "linkdir/o.txt", "dangling.txt", "early/abs.link", ".agentls/tasks/t1.md", "x.agentls-tmp-1-2"} {
		if slices.Contains(want, bad) {
			t.Errorf("the list holds %s", bad)
		}
	}
	for _, good := range []string{"a.go", "alias.go", "keep.log", "held/back.go", "held/deeper/d.go", "sub/s.go"} {
		if !slices.Contains(want, good) {
			t.Errorf("the list lacks %s", good)
		}
	}
}

// TestFilesWaitsForTheBackgroundWalk: Files, Glob and Indexed called while
// the walk is held answer only once it is over, with the whole list;
// reading a file does not wait.
func TestFilesWaitsForTheBackgroundWalk(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.go": "package a\n", "held/h.go": "package h\n"})
	release := make(chan struct{})
	ws := newWS(t, Options{Roots: []string{root}, ListInBackground: true, WalkHook: func(dir string) {
		if dir == "held" {
			<-release
		}
	}})
	p, err := ws.Resolve("a.go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ReadFile(context.Background(), p); err != nil {
		t.Fatalf("reading a file while the walk runs: %v", err)
	}
	type answer struct {
		files, glob []string
		indexed     bool
	}
	got := make(chan answer)
	go func() {
		files := pathStrings(ws.Files())
		g, _ := ws.Glob("**/*.go")
		hp, _ := ws.Resolve("held/h.go")
		got <- answer{files, pathStrings(g), ws.Indexed(hp)}
	}()
	if ws.Listed() {
		t.Fatal("listed while the walk is held")
	}
	close(release)
	a := <-got
	want := []string{"a.go", "held/h.go"}
	if !slices.Equal(a.files, want) || !slices.Equal(a.glob, want) || !a.indexed {
		t.Errorf("after the walk: Files %q, Glob %q, Indexed(held/h.go) %v; want %q twice and true", a.files, a.glob, a.indexed, want)
	}
}
