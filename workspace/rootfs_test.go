package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinksInsideTheWorkspaceStillWork: os.Root alone refuses absolute
// links and links from one root into another; located first, they read and
// edit as before: the edit lands in the target and the link stays a link.
func TestLinksInsideTheWorkspaceStillWork(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	writeTree(t, a, map[string]string{"real.txt": "real\n", "real2.txt": "real2\n", "sub/x.txt": "x\n"})
	writeTree(t, b, map[string]string{"other.txt": "other\n"})
	links := map[string]string{
		"abs-link.txt": filepath.Join(a, "real.txt"),  // absolute, inside
		"rel-link.txt": "real2.txt",                   // relative, inside
		"to-b.txt":     filepath.Join(b, "other.txt"), // into the second root
		"subdir":       filepath.Join(a, "sub"),       // an absolute link to a folder
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(a, name)); err != nil {
			t.Fatal(err)
		}
	}
	w := newWS(t, Options{Roots: []string{a, b}})
	ctx := context.Background()
	for name, want := range map[string]string{"abs-link.txt": "real\n", "rel-link.txt": "real2\n", "to-b.txt": "other\n", "subdir/x.txt": "x\n"} {
		p := mustResolve(t, w, name)
		f, err := w.ReadFile(ctx, p)
		if err != nil || f.Text != want {
			t.Errorf("ReadFile(%s) = %v, %v; want %q", name, f, err, want)
			continue
		}
		if err := w.DiskEditor().Apply(ctx, "t", []FileEdit{replaceAll(f, strings.ToUpper(want))}); err != nil {
			t.Errorf("edit through %s: %v", name, err)
		}
		if fi, err := os.Lstat(filepath.Join(a, strings.Split(name, "/")[0])); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link after the edit: %v", name, err)
		}
		if _, err := w.Stat(p); err != nil {
			t.Errorf("Stat(%s): %v", name, err)
		}
	}
	if got := readString(t, filepath.Join(b, "other.txt")); got != "OTHER\n" {
		t.Errorf("b/other.txt = %q; want the edit made through a/to-b.txt", got)
	}
	if got := readString(t, filepath.Join(a, "sub", "x.txt")); got != "X\n" {
		t.Errorf("a/sub/x.txt = %q; want the edit made through a/subdir", got)
	}
}

// TestLinkToOutsideIsRefusedWithoutItsTarget: a name that was checked
// while inside and became a link to the outside before the access is
// refused, and the message does not say where the link points.
func TestLinkToOutsideIsRefusedWithoutItsTarget(t *testing.T) {
	tmp := t.TempDir()
	root, out := filepath.Join(tmp, "ws"), filepath.Join(tmp, "elsewhere")
	writeTree(t, root, map[string]string{"sub/f.txt": "inside\n"})
	writeTree(t, out, map[string]string{"f.txt": "OUTSIDE\n"})
	w := newWS(t, Options{Roots: []string{root}})
	p := mustResolve(t, w, "sub/f.txt")
	f := mustRead(t, w, p)
	// The swap, after the check.
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	_, err := w.ReadFile(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "is a link that leads outside the workspace") || strings.Contains(err.Error(), out) {
		t.Errorf("ReadFile after the swap = %v; want a refusal that does not name %s", err, out)
	}
	err = w.DiskEditor().Apply(context.Background(), "t", []FileEdit{replaceAll(f, "changed\n")})
	if err == nil || strings.Contains(err.Error(), out) {
		t.Errorf("Apply after the swap = %v; want a refusal that does not name %s", err, out)
	}
	if _, _, err := w.Open(p); err == nil || strings.Contains(err.Error(), out) {
		t.Errorf("Open after the swap = %v; want a refusal that does not name %s", err, out)
	}
	if got := readString(t, filepath.Join(out, "f.txt")); got != "OUTSIDE\n" {
		t.Errorf("the outside file changed: %q", got)
	}
}
