package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentls/agentls/internal/rawsys"
)

// forEachCallKind runs f with the scheduler's system calls (a server's)
// and with raw ones (rawsys.WithoutHandoff, the command line's).
func forEachCallKind(t *testing.T, f func(t *testing.T)) {
	for _, raw := range []bool{false, true} {
		t.Run(map[bool]string{false: "handoff", true: "raw"}[raw], func(t *testing.T) {
			defer rawsys.SetForTest(raw)()
			f(t)
		})
	}
}

func TestListDirReportsEveryEntryWithItsType(t *testing.T) {
	forEachCallKind(t, testListDirReportsEveryEntryWithItsType)
}

func testListDirReportsEveryEntryWithItsType(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Enough entries to need more than one getdents call and a larger
	// buffer than the first.
	for i := range 3000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-with-a-long-name-%04d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]fs.FileMode{}
	if err := listDir(dir, false, nil, func(name []byte, typ fs.FileMode) { got[string(name)] = typ }); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{"a.go": 0, "sub": fs.ModeDir, "link": fs.ModeSymlink, "pipe": fs.ModeIrregular}
	for name, typ := range want {
		if g, ok := got[name]; !ok || g != typ {
			t.Errorf("%s: got type %v (listed %v), want %v", name, g, ok, typ)
		}
	}
	if _, ok := got["."]; ok {
		t.Error(". is listed")
	}
	if _, ok := got[".."]; ok {
		t.Error(".. is listed")
	}
	if len(got) != len(want)+3000 {
		t.Errorf("listed %d entries, want %d", len(got), len(want)+3000)
	}
}

func TestListDirBelowTheRootDoesNotFollowALink(t *testing.T) {
	forEachCallKind(t, testListDirBelowTheRootDoesNotFollowALink)
}

func testListDirBelowTheRootDoesNotFollowALink(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "swapped")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		follow bool
		listed bool
	}{{follow: false, listed: false}, {follow: true, listed: true}} {
		listed := false
		err := listDir(link, tc.follow, nil, func(name []byte, _ fs.FileMode) { listed = listed || string(name) == "secret.txt" })
		if listed != tc.listed || (err == nil) != tc.listed {
			t.Errorf("follow=%v: listed the target's file %v (err %v), want %v", tc.follow, listed, err, tc.listed)
		}
	}
}
