package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEditRefusedWhileAnotherProgramHasTheFileOpenForWriting: a save in
// progress (the file open for writing, truncated, not yet rewritten) looks
// like content; the read lease sees the writer and the edit is refused as
// stale instead of replacing the file the save is about to fill.
func TestEditRefusedWhileAnotherProgramHasTheFileOpenForWriting(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\n"})
	name := filepath.Join(dir, "a.txt")
	probe, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	_, lerr := unix.FcntlInt(probe.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
	if lerr == nil {
		unix.FcntlInt(probe.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
	}
	probe.Close()
	if lerr != nil {
		t.Skipf("LEASES UNAVAILABLE here (F_SETLEASE: %v): edits fall back to the re-check without them", lerr)
	}
	w := newWS(t, Options{Roots: []string{dir}})
	f := mustRead(t, w, mustResolve(t, w, "a.txt"))
	var writer *os.File
	beforeRename = func(string) {
		// The save starts: open for writing, not yet truncated.
		writer, err = os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeRename = nil }()
	err = w.DiskEditor().Apply(context.Background(), "t", []FileEdit{replaceAll(f, "agent\n")})
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "another program") {
		t.Errorf("Apply during a save = %v; want ErrStale saying another program is writing it", err)
	}
	// The save completes into the file at a.txt.
	if writer != nil {
		writer.Truncate(0)
		writer.WriteString("the user's save\n")
		writer.Close()
	}
	if got := readString(t, name); got != "the user's save\n" {
		t.Errorf("a.txt = %q; want the user's save", got)
	}
}
