package workspace

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func pathStrings(ps []Path) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func TestIndexHonoursIgnoreFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".gitignore":                      "*.log\n/build/\ntmp/\n!keep.log\n# comment\n\n/only-top.txt\ndocs/**/*.gen.md\n",
		".ignore":                         "secret.env\n",
		".git/HEAD":                       "ref: refs/heads/main\n",
		".git/info/exclude":               "excluded-by-git-info.txt\n",
		".agentls/tasks/1.md":             "report\n",
		"node_modules/x/index.js":         "x\n",
		"main.go":                         "package main\n",
		"app.log":                         "log\n",
		"keep.log":                        "kept\n",
		"build/out.bin":                   "bin\n",
		"sub/build/gen.go":                "package build\n", // "/build/" is anchored to the root
		"sub/tmp/t.go":                    "package tmp\n",   // "tmp/" matches at any depth
		"sub/only-top.txt":                "x\n",
		"only-top.txt":                    "x\n",
		"secret.env":                      "k=v\n",
		"excluded-by-git-info.txt":        "x\n",
		"dist/story.md":                   "kept: dist is not excluded by default\n",
		"docs/a/b.gen.md":                 "gen\n",
		"docs/a/b.md":                     "doc\n",
		"pkg/.gitignore":                  "*.go\n!keep.go\n",
		"pkg/drop.go":                     "package pkg\n",
		"pkg/keep.go":                     "package pkg\n",
		"pkg/README":                      "readme\n",
		"pkg/inner/.gitignore":            "!drop.go\n",
		"pkg/inner/drop.go":               "package inner\n",
		"x/.main.go" + tempMarker + "123": "tmp\n",
		".github/workflows/ci.yml":        "on: push\n",
	})
	w := newWS(t, Options{Roots: []string{root}, Exclude: []string{"*.bin"}})
	got := pathStrings(w.Files())
	want := []string{
		".github/workflows/ci.yml", ".gitignore", ".ignore", "dist/story.md", "docs/a/b.md",
		"keep.log", "main.go", "pkg/.gitignore", "pkg/README", "pkg/inner/.gitignore", "pkg/inner/drop.go",
		"pkg/keep.go", "sub/build/gen.go", "sub/only-top.txt",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Files() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range w.Files() {
		if strings.HasPrefix(p.String(), StateDirName+"/") {
			t.Errorf("%s indexed: .agentls must never be", p)
		}
	}
}

func TestGlob(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"main.go": "", "main_test.go": "", "a/b.go": "", "a/b_test.go": "", "a/c/d.ts": "",
		"a/c/e.tsx": "", "go.mod": "", "a/go.mod": "", "README.md": "", "docs/x.md": "", ".go": "",
	})
	w := newWS(t, Options{Roots: []string{root}})
	tests := []struct {
		pat  string
		want []string
		err  error
	}{
		{"**/*.go", []string{".go", "a/b.go", "a/b_test.go", "main.go", "main_test.go"}, nil},
		{"**/*_test.go", []string{"a/b_test.go", "main_test.go"}, nil},
		{"*.go", []string{".go", "main.go", "main_test.go"}, nil},
		{"**/go.mod", []string{"a/go.mod", "go.mod"}, nil},
		{"a/**", []string{"a/b.go", "a/b_test.go", "a/c/d.ts", "a/c/e.tsx", "a/go.mod"}, nil},
		{"a/**/*.go", []string{"a/b.go", "a/b_test.go"}, nil},
		{"**/*.{ts,tsx}", []string{"a/c/d.ts", "a/c/e.tsx"}, nil},
		{"a/c/[d-e].ts*", []string{"a/c/d.ts", "a/c/e.tsx"}, nil},
		{"./docs/*.md", []string{"docs/x.md"}, nil},
		{"README.md", []string{"README.md"}, nil},
		{root + "/a/*.go", []string{"a/b.go", "a/b_test.go"}, nil},
		{"nothing/**", nil, nil},
		{"a/[b", nil, ErrBadPattern},
		{"{a,b", nil, ErrBadPattern},
		{"", nil, ErrBadPattern},
		{"/etc/**", nil, ErrOutside},
		{"../**/*.go", nil, ErrOutside},
	}
	for _, tt := range tests {
		got, err := w.Glob(tt.pat)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Glob(%q) = %v, %v; want error %v", tt.pat, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(pathStrings(got), tt.want) {
			t.Errorf("Glob(%q) = %v, %v; want %v", tt.pat, pathStrings(got), err, tt.want)
		}
	}
}

// TestGlobFastPathsAgreeWithDoublestar compares every fast path with
// doublestar.Match on random paths.
func TestGlobFastPathsAgreeWithDoublestar(t *testing.T) {
	elems := []string{"a", "b", "go", ".go", "x.go", "x_test.go", "go.mod", "c.ts", "d.tsx", "a.go.txt", "dir"}
	rng := rand.New(rand.NewPCG(1, 2))
	var paths []string
	for i := 0; i < 3000; i++ {
		n := 1 + rng.IntN(4)
		parts := make([]string, n)
		for j := range parts {
			parts[j] = elems[rng.IntN(len(elems))]
		}
		paths = append(paths, strings.Join(parts, "/"))
	}
	pats := []string{"**/*.go", "**/*_test.go", "*.go", "**/go.mod", "a/**", "a/**/*.go", "a/b/**",
		"**/*.{ts,tsx}", "{a,b}/**/*.go", "a/*.go", "**/x.go", "**", "*", "a/{b,go}/**", "dir/**/*_test.go"}
	for _, pat := range pats {
		m := compileGlob(pat)
		for _, p := range paths {
			want, _ := doublestar.Match(pat, p)
			if got := m.match(p); got != want {
				t.Errorf("match(%q, %q) = %v; doublestar says %v", pat, p, got, want)
			}
		}
	}
}

func TestIndexMultiRootPrefix(t *testing.T) {
	tmp := t.TempDir()
	app, lib := filepath.Join(tmp, "app"), filepath.Join(tmp, "lib")
	writeTree(t, app, map[string]string{"main.go": ""})
	writeTree(t, lib, map[string]string{"x.go": "", "y.txt": ""})
	w := newWS(t, Options{Roots: []string{app, lib}})
	if got := pathStrings(w.Files()); !slices.Equal(got, []string{"main.go", "lib/x.go", "lib/y.txt"}) {
		t.Errorf("Files() = %v", got)
	}
	got, err := w.Glob("**/*.go")
	if err != nil || !slices.Equal(pathStrings(got), []string{"main.go", "lib/x.go"}) {
		t.Errorf("Glob(**/*.go) = %v, %v", pathStrings(got), err)
	}
	got, err = w.Glob("lib/*")
	if err != nil || !slices.Equal(pathStrings(got), []string{"lib/x.go", "lib/y.txt"}) {
		t.Errorf("Glob(lib/*) = %v, %v", pathStrings(got), err)
	}
	// Every listed Path resolves back to itself.
	for _, p := range w.Files() {
		if q, err := w.Resolve(p.String()); err != nil || q != p {
			t.Errorf("Resolve(%q) = %+v, %v; want %+v", p, q, err, p)
		}
	}
	_ = os.Remove
}

// MayHold answers "surely not there" only for a name that nothing on disk
// and no open buffer holds, in whichever root the name points to: a probe
// that says false for a real file would hide a folder's instructions.
func TestMayHoldIsFalseOnlyForWhatIsNowhere(t *testing.T) {
	tmp := t.TempDir()
	app, lib := filepath.Join(tmp, "app"), filepath.Join(tmp, "lib")
	writeTree(t, app, map[string]string{"main.go": "", "pkg/AGENTS.md": "x"})
	writeTree(t, lib, map[string]string{"sub/CLAUDE.md": "y"})
	if err := os.Symlink(filepath.Join(tmp, "elsewhere"), filepath.Join(app, "dangling")); err != nil {
		t.Fatal(err)
	}
	w := newWS(t, Options{Roots: []string{app, lib}})
	w.Buffers().Open(filepath.Join(app, "new", "AGENTS.md"), "markdown", 1, "unsaved")
	for _, c := range []struct {
		input string
		want  bool
	}{
		{"pkg/AGENTS.md", true},
		{"pkg/CLAUDE.md", false},
		{"nowhere/AGENTS.md", false},
		{"main.go/AGENTS.md", false}, // below a file
		{"lib/sub/CLAUDE.md", true},  // the second root, by its prefix
		{"lib/sub/AGENTS.md", false}, // nothing there
		{"app/pkg/AGENTS.md", true},  // the primary root's own name repeated
		{"new/AGENTS.md", true},      // an open buffer not yet on disk
		{"dangling", true},           // a link is something: Resolve decides
		{filepath.Join(app, "absent.md"), true},
	} {
		if got := w.MayHold(c.input); got != c.want {
			t.Errorf("MayHold(%q) = %v, want %v", c.input, got, c.want)
		}
	}
}
