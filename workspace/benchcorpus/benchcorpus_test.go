package benchcorpus

import (
	"bytes"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCopyGoSourceCopiesTheFirstFilesWhole: the tree holds exactly the
// first n files of a walk of GOROOT/src, each at its own path with its
// own bytes.
func TestCopyGoSourceCopiesTheFirstFilesWhole(t *testing.T) {
	const n = 25
	dir := t.TempDir()
	made, err := CopyGoSource(dir, n)
	if err != nil || made != n {
		t.Fatalf("CopyGoSource(%d) = %d, %v; want %d files", n, made, err, n)
	}
	src := filepath.Join(build.Default.GOROOT, "src")
	var want []string
	_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && len(want) < n {
			rel, _ := filepath.Rel(src, p)
			want = append(want, rel)
		}
		return err
	})
	var got []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("the tree holds %d files; want %d: %q", len(got), n, got)
	}
	for i, rel := range want {
		if got[i] != rel {
			t.Fatalf("file %d is %s; want %s", i, got[i], rel)
		}
		a, err1 := os.ReadFile(filepath.Join(src, rel))
		b, err2 := os.ReadFile(filepath.Join(dir, rel))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from its original (%v, %v)", rel, err1, err2)
		}
	}
}
