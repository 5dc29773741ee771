package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckWrite: writes of git's and agentls's own state are refused,
// however they are spelled and wherever git would look; the work tree's
// files (even ones git reads, such as .gitignore) are not.
func TestCheckWrite(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs", ".agentls", "src",
		"vendor/lib/.git", "fake/objects", "fake/refs", "half/refs", "halfobj/objects", "linked/x", "plain/objects"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git/HEAD", "fake/HEAD", "linked/commondir", "sub/.git"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".git", filepath.Join(dir, "gitlink")); err != nil {
		t.Fatal(err)
	}
	w := newWS(t, Options{Roots: []string{dir}})
	for _, tc := range []struct {
		path    string
		refused bool
	}{
		{".git/config", true},
		{".git/hooks/pre-commit", true},
		{".git/commondir", true},
		{".git", true},                   // replacing the git dir, or creating a .git file
		{"sub/.git", true},               // a gitdir: link
		{"new/.git", true},               // creating a .git where there was none
		{"vendor/lib/.git/config", true}, // a nested repository
		{".GIT/config", true},
		{".git./config", true},
		{"GIT~1/config", true},
		{".agentls/settings.json", true},
		{".AGENTLS/settings.json", true},
		{"gitlink/config", true}, // a symlink to .git
		{"fake/config", true},    // HEAD with objects/ and refs/: a git dir under another name
		{"fake/objects/info/alternates", true},
		{"half/HEAD", true}, // would make half a git dir (refs/ is there)
		{"halfobj/HEAD", true},
		{"src/HEAD/x", false},            // a folder named HEAD, no objects/ or refs/ beside it
		{"plain/refs/heads/main", false}, // objects/ but no HEAD: not a git dir
		{"linked/x/file", true},          // a folder with commondir
		{"tools/commondir", true},        // would make tools a git dir
		{"tools/gitdir", true},
		{"tools/HEAD", false}, // alone, HEAD is just a file
		{".gitattributes", false},
		{".gitignore", false},
		{".github/workflows/ci.yml", false},
		{"src/main.go", false},
		{"src/.gitkeep", false},
		{"agentls/x", false},
	} {
		p, err := w.Resolve(tc.path)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", tc.path, err)
		}
		err = w.CheckWrite(p)
		if got := errors.Is(err, ErrProtected); got != tc.refused {
			t.Errorf("CheckWrite(%q) = %v; want refused %v", tc.path, err, tc.refused)
		}
	}
}
