package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// linkFree is realPath's shortcut: it may say true only for a path that
// exists with no link in any component, or realPath would return a link's
// name as its real path (and a link that leads outside would pass for a
// file inside).
func TestLinkFreeIsTrueOnlyWithoutAnyLink(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, tmp, map[string]string{"dir/file.txt": "x", "other/f.txt": "y"})
	for link, target := range map[string]string{
		"link.txt":     filepath.Join(tmp, "dir", "file.txt"),
		"dirlink":      filepath.Join(tmp, "dir"),
		"dangling":     filepath.Join(tmp, "nowhere"),
		"dir/rel-link": "../other/f.txt",
	} {
		if err := os.Symlink(target, filepath.Join(tmp, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		rel  string
		want bool
	}{
		{"dir/file.txt", true},
		{"dir", true},
		{"link.txt", false},         // the last component is a link
		{"dirlink/file.txt", false}, // a folder on the way is a link
		{"dir/rel-link", false},
		{"dangling", false},
		{"dir/missing.txt", false}, // missing: the walk keeps the tail as written
		{"dir/file.txt/x", false},
	} {
		if got := linkFree(filepath.Join(tmp, c.rel)); got != c.want {
			t.Errorf("linkFree(%s) = %v, want %v", c.rel, got, c.want)
		}
	}
}
