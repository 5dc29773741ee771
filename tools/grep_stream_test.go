package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// streamTree writes two roots whose files a whole-workspace search must
// tell apart: ignored and excluded files, secret files by name and by a
// link's target, links to files inside and outside the roots, a linked
// folder, a binary file, folders deep and wide, and enough matches that
// a limit cuts them. Every one of them holds "needle". It returns the
// roots, primary first.
func streamTree(t *testing.T) []string {
	t.Helper()
	tmp := t.TempDir()
	main, lib, outside := filepath.Join(tmp, "main"), filepath.Join(tmp, "lib"), filepath.Join(tmp, "outside")
	files := map[string]string{
		"main/a.go":                 "package a\n// needle 1\nfunc A() {} // needle 2\n",
		"main/.gitignore":           "*.log\nbuild/\n!keep.log\n",
		"main/debug.log":            "needle in an ignored file\n",
		"main/keep.log":             "needle kept by a negated rule\n",
		"main/build/out.go":         "needle in an ignored folder\n",
		"main/node_modules/m/m.js":  "needle in an excluded folder\n",
		"main/.env":                 "TOKEN=needle-secret\n",
		"main/config/secrets.yaml":  "password: needle\n",
		"main/sub/.ignore":          "local.txt\n",
		"main/sub/local.txt":        "needle ignored by a nested .ignore\n",
		"main/sub/kept.txt":         "a needle\nNEEDLE upper\n",
		"main/zz/last.go":           "// needle in the folder the walk reaches last\n",
		"main/d1/d2/d3/d4/deep.go":  "// needle deep\n",
		"main/bin.dat":              "needle\x00binary\n",
		"outside/secret.txt":        "needle outside the roots\n",
		"lib/lib.go":                "package lib // needle in the second root\n",
		"lib/zz/z.go":               "needle z\n",
		"lib/.gitignore":            "gen/\n",
		"lib/gen/g.go":              "needle generated\n",
		"main/.agentls/tasks/t1.md": "needle in agentls's own folder\n",
	}
	for i := range 60 {
		files[fmt.Sprintf("main/wide/f%02d.txt", i)] = fmt.Sprintf("line\nneedle %d\nneedle again %d\n", i, i)
	}
	for name, text := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"main/alias.go":         "a.go",                   // inside: listed
		"main/docs/setup.txt":   "../.env",                // a secret by its target
		"main/escape.txt":       "../outside/secret.txt",  // outside: never listed
		"main/linkdir":          "../outside",             // a folder: not followed
		"main/zz/back.go":       "../d1/d2/d3/d4/deep.go", // inside, from the late folder
		"lib/abs-escape.txt":    filepath.Join(outside, "secret.txt"),
		"main/dangling.txt":     "nowhere.txt",
		"main/sub/up/../x.link": "../kept.txt",
	}
	for name, target := range links {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return []string{main, lib}
}

// grepBoth runs one grep on a workspace listed before the search
// (complete) and on one whose walk is held in folder zz until the search
// has started reading the files found so far (streamed).
func grepBoth(t *testing.T, roots []string, args map[string]any) (complete, streamed Result) {
	t.Helper()
	ctx := context.Background()
	open := func(opts workspace.Options) *workspace.Workspace {
		opts.Roots = roots[:1]
		ws, err := workspace.New(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		if err := ws.AddRoot(ctx, roots[1]); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	search := func(ws *workspace.Workspace) Result {
		idx := grep.NewIndex(0)
		t.Cleanup(func() { idx.Close() })
		return call(t, newReg(t, Env{Workspace: ws, Index: idx}), "grep", args)
	}
	complete = search(open(workspace.Options{}))

	release := make(chan struct{})
	var once sync.Once
	ws := open(workspace.Options{ListInBackground: true, WalkHook: func(dir string) {
		if dir == "zz" {
			<-release
		}
	}})
	started := false
	streamHook = func() {
		started = true
		if ws.Listed() {
			t.Error("the walk ended before the search started: nothing was streamed")
		}
		once.Do(func() { close(release) })
	}
	defer func() { streamHook = nil }()
	streamed = search(ws)
	if !started {
		t.Fatal("the search waited for the list instead of reading the files as they were found")
	}
	return complete, streamed
}

// TestGrepWhileListingFindsWhatTheListedSearchFinds: a whole-workspace grep
// that starts while the workspace's files are still being listed returns
// exactly the files, lines and notes of the same grep on the complete list:
// ignored, excluded and outside files stay out, secret files are left out
// by name and by a link's target, and a limit keeps the first matches in
// the list's order.
func TestGrepWhileListingFindsWhatTheListedSearchFinds(t *testing.T) {
	roots := streamTree(t)
	cases := []struct {
		name string
		args map[string]any
	}{
		{"literal", map[string]any{"pattern": "needle", "literal": true}},
		{"regex", map[string]any{"pattern": `needle( again)? \d+`}},
		{"ignore case", map[string]any{"pattern": "needle", "ignore_case": true}},
		{"context", map[string]any{"pattern": "needle", "literal": true, "context": 1}},
		{"limit cuts in list order", map[string]any{"pattern": "needle", "literal": true, "limit": 7}},
		{"limit ends inside a file", map[string]any{"pattern": "needle", "literal": true, "limit": 4}},
		{"no match", map[string]any{"pattern": "no such text anywhere", "literal": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			complete, streamed := grepBoth(t, roots, c.args)
			if complete.IsError != streamed.IsError {
				t.Fatalf("error %v vs %v:\n%s\n---\n%s", complete.IsError, streamed.IsError, complete.Text, streamed.Text)
			}
			cd, _ := complete.Data.(*GrepOutput)
			sd, _ := streamed.Data.(*GrepOutput)
			if cd == nil || sd == nil {
				t.Fatalf("no grep output: %v, %v", complete.Text, streamed.Text)
			}
			if !slices.Equal(cd.Files, sd.Files) || cd.Matches != sd.Matches || cd.Truncated != sd.Truncated {
				t.Errorf("files %q (%d lines, truncated %v) vs streamed %q (%d lines, truncated %v)",
					cd.Files, cd.Matches, cd.Truncated, sd.Files, sd.Matches, sd.Truncated)
			}
			// Every printed line but the summary, whose count of files
			// searched may differ when the limit stopped the listed
			// search early.
			if cl, sl := shownLines(complete.Text), shownLines(streamed.Text); !slices.Equal(cl, sl) {
				t.Errorf("lines differ:\n%s\n--- streamed:\n%s", complete.Text, streamed.Text)
			}
			if !cd.Truncated && complete.Text != streamed.Text {
				t.Errorf("text differs:\n%s\n--- streamed:\n%s", complete.Text, streamed.Text)
			}
			for _, bad := range []string{"debug.log", "build/out.go", "node_modules", "secret.txt", "escape.txt", "local.txt", "gen/g.go", "linkdir", ".agentls", "bin.dat", "setup.txt:", ".env:"} {
				if strings.Contains(streamed.Text, bad) {
					t.Errorf("the streamed search showed %s:\n%s", bad, streamed.Text)
				}
			}
		})
	}
}

// shownLines is a grep result's text without its summary line.
func shownLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "(") {
			out = append(out, l)
		}
	}
	return out
}
