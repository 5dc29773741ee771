package workspace

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree creates files (path -> content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newWS(t testing.TB, opts Options) *Workspace {
	t.Helper()
	w, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New(%v): %v", opts.Roots, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// pathFixture is <tmp>/dist (the root, named like a build folder) and
// <tmp>/outside, with symlinks from the root to inside and outside; HOME is
// <tmp>.
func pathFixture(t testing.TB) (w *Workspace, tmp, root string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(tmp, "dist")
	writeTree(t, root, map[string]string{
		"story.md":      "once upon a time\n",
		"a/b.go":        "package a\n",
		"sp ace/ü.txt":  "unicode\n",
		"docs/guide.md": "# guide\n",
	})
	writeTree(t, filepath.Join(tmp, "outside"), map[string]string{"secret.txt": "secret\n"})
	links := map[string]string{
		"link-in":      "a/b.go",
		"link-out":     filepath.Join(tmp, "outside", "secret.txt"),
		"dirlink-out":  filepath.Join(tmp, "outside"),
		"dangling-out": filepath.Join(tmp, "outside", "new.txt"),
		"link-proc":    "/proc/self/root",
		"loop":         "loop",
		"rel-out":      "../outside/secret.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if tb, ok := t.(*testing.T); ok {
		tb.Setenv("HOME", tmp)
	} else {
		os.Setenv("HOME", tmp)
	}
	return newWS(t, Options{Roots: []string{root}}), tmp, root
}

func TestResolve(t *testing.T) {
	w, tmp, root := pathFixture(t)
	enc := (&url.URL{Scheme: "file", Path: root}).String()
	backslashed := strings.ReplaceAll(root, "/", `\`)
	tests := []struct {
		in   string
		want string // expected Path.String(); "" when an error is expected
		err  error
	}{
		// Relative forms.
		{"story.md", "story.md", nil},
		{"./story.md", "story.md", nil},
		{"a/b.go", "a/b.go", nil},
		{"./a/b.go", "a/b.go", nil},
		{"a//b.go", "a/b.go", nil},
		{"a/./b.go", "a/b.go", nil},
		{"a/x/../b.go", "a/b.go", nil},
		{"a//b/../b.go", "a/b.go", nil},
		{"a/b.go/", "a/b.go", nil},
		{"a/b.go/../../story.md", "story.md", nil},
		{".", ".", nil},
		{"./", ".", nil},
		{"a", "a", nil},
		{"new/file.go", "new/file.go", nil},
		{" story.md ", "story.md", nil},
		{"sp ace/ü.txt", "sp ace/ü.txt", nil},
		{"a/b.go#frag", "a/b.go#frag", nil},
		// Dot-dot.
		{"../dist/story.md", "story.md", nil},
		{"..", "", ErrOutside},
		{"../outside/secret.txt", "", ErrOutside},
		{"a/../../outside/secret.txt", "", ErrOutside},
		{"../../../../../../etc/passwd", "", ErrOutside},
		// Absolute.
		{root + "/story.md", "story.md", nil},
		{root + "/a/../story.md", "story.md", nil},
		{root, ".", nil},
		{root + "/", ".", nil},
		{root + "//a///b.go", "a/b.go", nil},
		{tmp + "/outside/secret.txt", "", ErrOutside},
		{"/etc/passwd", "", ErrOutside},
		{"/", "", ErrOutside},
		{root + "/../outside/secret.txt", "", ErrOutside},
		{root + "x/story.md", "", ErrOutside},
		{root + "/dirlink-out/secret.txt", "", ErrOutside},
		// file:// URIs.
		{"file://" + root + "/story.md", "story.md", nil},
		{enc + "/sp%20ace/%C3%BC.txt", "sp ace/ü.txt", nil},
		{"file://localhost" + root + "/story.md", "story.md", nil},
		{"FILE://" + root + "/a/b.go", "a/b.go", nil},
		{"file://" + root + "/a%2Fb.go", "a/b.go", nil},
		{"file:story.md", "story.md", nil},
		{"file:///etc/passwd", "", ErrOutside},
		{"file://otherhost/share/x.go", "", ErrOutside},
		{"file://%zz/x", "", ErrInvalidPath},
		{"file://", "", ErrInvalidPath},
		// Windows-style inputs on this platform (drive letters can only be
		// outside a Unix root).
		{"file:///C:/Users/me/a.go", "", ErrOutside},
		{`C:\Users\me\a.go`, "", ErrOutside},
		{"c:/x/y.go", "", ErrOutside},
		// Backslash separators.
		{`a\b.go`, "a/b.go", nil},
		{`.\a\b.go`, "a/b.go", nil},
		{`a\\b.go`, "a/b.go", nil},
		{`docs\guide.md`, "docs/guide.md", nil},
		{backslashed + `\story.md`, "story.md", nil},
		{`..\outside\secret.txt`, "", ErrOutside},
		// Home.
		{"~/dist/story.md", "story.md", nil},
		{"~", "", ErrOutside},
		{"~/outside/secret.txt", "", ErrOutside},
		{"~root/x", "", ErrOutside},
		// The root's own name repeated (never dist/dist/story.md).
		{"dist/story.md", "story.md", nil},
		{"./dist/story.md", "story.md", nil},
		{"dist/a/b.go", "a/b.go", nil},
		{"dist/new.md", "new.md", nil},
		{"dist", ".", nil},
		// Symlinks.
		{"link-in", "link-in", nil},
		{"link-out", "", ErrOutside},
		{"rel-out", "", ErrOutside},
		{"dirlink-out/secret.txt", "", ErrOutside},
		{"dirlink-out", "", ErrOutside},
		{"dirlink-out/new.txt", "", ErrOutside},
		{"dangling-out", "", ErrOutside},
		{"link-proc", "", ErrOutside},
		{"link-proc/etc/passwd", "", ErrOutside},
		{"dirlink-out/../story.md", "story.md", nil}, // ".." is lexical
		{"loop", "", ErrInvalidPath},
		// /proc tricks.
		{"/proc/self/root" + root + "/story.md", "", ErrOutside},
		{"/proc/self/cwd/story.md", "", ErrOutside},
		{"/proc/1/root/etc/passwd", "", ErrOutside},
		// Not paths.
		{"", "", ErrInvalidPath},
		{"   ", "", ErrInvalidPath},
		{"a\x00b", "", ErrInvalidPath},
		{"story.md\x00.png", "", ErrInvalidPath},
	}
	if len(tests) < 60 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tt := range tests {
		p, err := w.Resolve(tt.in)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Resolve(%q) = %q, %v; want error %v", tt.in, p, err, tt.err)
			}
			continue
		}
		if err != nil || p.String() != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.in, p, err, tt.want)
			continue
		}
		if abs := w.Abs(p); !strings.HasPrefix(abs+"/", root+"/") {
			t.Errorf("Abs(Resolve(%q)) = %s, outside %s", tt.in, abs, root)
		}
	}
}

// TestResolveErrorsNameInputAndRootsNeverLinkTargets checks an outside
// path's error names the input and the roots, so the model can correct
// itself, and that a link's refusal never says where the link points.
func TestResolveErrorsNameInputAndRootsNeverLinkTargets(t *testing.T) {
	w, _, root := pathFixture(t)
	_, err := w.Resolve("../outside/secret.txt")
	for _, want := range []string{`"../outside/secret.txt"`, root, "outside the workspace"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve error %q does not mention %q", err, want)
		}
	}
	_, err = w.Resolve("link-out")
	if err == nil || !strings.Contains(err.Error(), "is a link that leads outside the workspace") {
		t.Errorf("Resolve(link-out) error %q does not say it is a link that leads outside", err)
	}
	if target, _ := os.Readlink(filepath.Join(root, "link-out")); err != nil && target != "" && (strings.Contains(err.Error(), target) || strings.Contains(err.Error(), "secret.txt")) {
		t.Errorf("Resolve(link-out) error %q reveals the link's target %s", err, target)
	}
}

// TestResolveRealFolderNamedLikeRoot: when the root really has a folder
// with its own name, that folder wins.
func TestResolveRealFolderNamedLikeRoot(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "site")
	writeTree(t, root, map[string]string{"site/index.html": "x", "index.html": "y"})
	w := newWS(t, Options{Roots: []string{root}})
	for in, want := range map[string]string{
		"site/index.html": "site/index.html",
		"index.html":      "index.html",
		"site/new.html":   "site/new.html", // the folder exists: a new file goes in it
	} {
		if p, err := w.Resolve(in); err != nil || p.String() != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, p, err, want)
		}
	}
}

func TestResolveMultiRoot(t *testing.T) {
	tmp := t.TempDir()
	app, lib := filepath.Join(tmp, "app"), filepath.Join(tmp, "lib")
	writeTree(t, app, map[string]string{"main.go": "package main\n"})
	writeTree(t, lib, map[string]string{"x.go": "package lib\n"})
	w := newWS(t, Options{Roots: []string{app, lib}})
	tests := []struct{ in, want, root string }{
		{"main.go", "main.go", app},
		{"lib/x.go", "lib/x.go", lib},
		{filepath.Join(lib, "x.go"), "lib/x.go", lib},
		{"../lib/x.go", "lib/x.go", lib},
		{"file://" + lib + "/x.go", "lib/x.go", lib},
		{"lib", "lib", lib},
	}
	for _, tt := range tests {
		p, err := w.Resolve(tt.in)
		if err != nil || p.String() != tt.want || p.Root() != tt.root {
			t.Errorf("Resolve(%q) = %q in %s, %v; want %q in %s", tt.in, p, p.Root(), err, tt.want, tt.root)
		}
	}
	if _, err := w.Resolve(filepath.Join(tmp, "other", "y.go")); !errors.Is(err, ErrOutside) {
		t.Errorf("Resolve(outside both roots) = %v; want ErrOutside", err)
	}
	// Removing a root makes its files outside.
	if err := w.RemoveRoot(lib); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Resolve(filepath.Join(lib, "x.go")); !errors.Is(err, ErrOutside) {
		t.Errorf("after RemoveRoot, Resolve(lib/x.go) = %v; want ErrOutside", err)
	}
	if err := w.AddRoot(context.Background(), lib); err != nil {
		t.Fatal(err)
	}
	if p, err := w.Resolve("lib/x.go"); err != nil || p.Root() != lib {
		t.Errorf("after AddRoot, Resolve(lib/x.go) = %q in %s, %v", p, p.Root(), err)
	}
}

// TestURIPlatforms checks file URI decoding as each platform spells it.
func TestURIPlatforms(t *testing.T) {
	tests := []struct {
		uri, goos, want string
		err             error
	}{
		{"file:///C:/Users/me/a%20b.go", "windows", "C:/Users/me/a b.go", nil},
		{"file:///c%3A/src/x.go", "windows", "C:/src/x.go", nil},
		{"file:///d:/src/%C3%BC.go", "windows", "D:/src/ü.go", nil},
		{"file://server/share/x.go", "windows", "//server/share/x.go", nil},
		{"file:///home/me/x.go", "windows", "/home/me/x.go", nil},
		{"file:///C:/Users/me/a%20b.go", "linux", "/C:/Users/me/a b.go", nil},
		{"file://server/share/x.go", "linux", "", ErrOutside},
		{"file:///home/me/a%23b.go", "linux", "/home/me/a#b.go", nil},
		{"file:///home/me/a#b.go", "linux", "/home/me/a#b.go", nil},
		{"http://x/y", "linux", "", ErrInvalidPath},
	}
	for _, tt := range tests {
		got, err := uriToPath(tt.uri, tt.goos)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("uriToPath(%q, %s) = %q, %v; want %v", tt.uri, tt.goos, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("uriToPath(%q, %s) = %q, %v; want %q", tt.uri, tt.goos, got, err, tt.want)
		}
	}
	if _, err := normalizeInput("C:foo.go", "windows"); !errors.Is(err, ErrInvalidPath) {
		t.Errorf(`normalizeInput("C:foo.go", windows) = %v; want ErrInvalidPath`, err)
	}
	if s, err := normalizeInput(`C:\src\x.go`, "windows"); err != nil || s != "C:/src/x.go" || !isAbsSlash(s, "windows") {
		t.Errorf(`normalizeInput(C:\src\x.go, windows) = %q, %v`, s, err)
	}
}

// realInside reports whether abs, after evaluating the symlinks of its
// longest existing prefix (and a dangling final link), is inside real.
func realInside(t testing.TB, abs, real string) bool {
	p := abs
	var rest []string
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = filepath.Dir(p)
	}
	ev, err := filepath.EvalSymlinks(p)
	if err != nil {
		// A dangling symlink: where would a write land?
		target, rerr := os.Readlink(p)
		if rerr != nil {
			return false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		return realInside(t, filepath.Join(append([]string{target}, rest...)...), real)
	}
	full := filepath.Join(append([]string{ev}, rest...)...)
	return full == real || strings.HasPrefix(full, real+string(filepath.Separator))
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"story.md", "../outside/secret.txt", "dirlink-out/secret.txt", "dangling-out",
		"link-proc/etc", "/proc/self/root/etc/passwd", "file:///etc/passwd", `..\outside`,
		"~/outside/secret.txt", "dist/../../outside/secret.txt", "a/../..", "file://%2e%2e/x",
		"file:///%2e%2e/outside", "dist/dirlink-out/x", "rel-out", "loop/x",
	} {
		f.Add(s)
	}
	w, _, root := pathFixture(f)
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		f.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(root), "outside")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := w.Resolve(in)
		if err != nil {
			// A refusal never says where a link points: an input that does
			// not itself spell a way out (.., an absolute path, ~, a URI)
			// can only reach the outside folder through a link.
			if !strings.Contains(in, "..") && !strings.ContainsAny(in, "/\\~%:") && strings.Contains(err.Error(), outside) {
				t.Fatalf("Resolve(%q) error %q reveals a link's target %s", in, err, outside)
			}
			return
		}
		abs := w.Abs(p)
		if abs != root && !strings.HasPrefix(abs, root+"/") {
			t.Fatalf("Resolve(%q) = %s: Abs %s is outside %s", in, p, abs, root)
		}
		if !realInside(t, abs, real) {
			t.Fatalf("Resolve(%q) = %s: %s resolves outside %s", in, p, abs, real)
		}
		if strings.Contains(p.String(), "\\") || strings.HasPrefix(p.String(), "/") || strings.Contains(p.String(), "//") {
			t.Fatalf("Resolve(%q) = %q: not a clean slash path", in, p)
		}
	})
}
