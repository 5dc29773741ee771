package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentls/agentls/workspace"
)

// The symlink-swap race: while a tool runs, a goroutine keeps swapping a
// folder inside the workspace (sub/) with a symlink, also inside the
// workspace, that points to a folder outside. The path check and the
// access are separate moments; every access goes through the root's
// handle, so whatever is swapped in, nothing outside is ever read, listed
// or written.

const swapTries = 1000

// swapFixture makes <tmp>/ws (the workspace, watched) with sub/ holding
// inside, and <tmp>/outside holding outside, plus ws/sublink -> outside.
func swapFixture(t *testing.T, inside, outside map[string]string) (ws *workspace.Workspace, root, out string) {
	t.Helper()
	tmp := t.TempDir()
	root, out = filepath.Join(tmp, "ws"), filepath.Join(tmp, "outside")
	write := func(dir string, files map[string]string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(filepath.Join(root, "sub"), inside)
	write(out, outside)
	if err := os.Symlink(out, filepath.Join(root, "sublink")); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{root}, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, root, out
}

// startSwapping swaps root/sub and root/sublink until the returned stop is
// called; stop leaves sub/ a folder again and returns the number of swaps.
// It uses renameat2(RENAME_EXCHANGE), the atomic swap, and falls back to
// pairs of renames where the file system lacks it.
func startSwapping(t *testing.T, root string) (stop func() int) {
	t.Helper()
	a, b := filepath.Join(root, "sub"), filepath.Join(root, "sublink")
	tmp := filepath.Join(root, "swap.tmp")
	var done atomic.Bool
	var n atomic.Int64
	var wg sync.WaitGroup
	exchange := true
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
			t.Fatalf("renameat2: %v", err)
		}
		t.Logf("renameat2(RENAME_EXCHANGE) unsupported here (%v): swapping with pairs of renames", err)
		exchange = false
	} else {
		n.Add(1)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if exchange {
				if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err == nil {
					n.Add(1)
				}
				continue
			}
			if os.Rename(a, tmp) == nil && os.Rename(b, a) == nil && os.Rename(tmp, b) == nil {
				n.Add(1)
			}
		}
	}()
	return func() int {
		done.Store(true)
		wg.Wait()
		if fi, err := os.Lstat(a); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			if exchange {
				_ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
			} else {
				_ = os.Rename(a, tmp)
				_ = os.Rename(b, a)
				_ = os.Rename(tmp, b)
			}
		}
		if fi, err := os.Lstat(a); err != nil || !fi.IsDir() {
			t.Fatalf("after swapping, sub is not a folder: %v %v", fi, err)
		}
		return int(n.Load())
	}
}

// listOutside returns the names in the outside folder.
func listOutside(t *testing.T, out string) []string {
	t.Helper()
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestReadFileNeverReadsOutsideUnderSymlinkSwaps(t *testing.T) {
	ws, root, _ := swapFixture(t,
		map[string]string{"secret.txt": "inside text\n"},
		map[string]string{"secret.txt": "OUTSIDE-SECRET\n"})
	r := newReg(t, Env{Workspace: ws})
	stop := startSwapping(t, root)
	leaked, read, refused := 0, 0, 0
	for i := 0; i < swapTries; i++ {
		res := call(t, r, "read_file", map[string]any{"path": "sub/secret.txt"})
		switch {
		case strings.Contains(res.Text, "OUTSIDE"):
			leaked++
		case strings.Contains(res.Text, "inside text"):
			read++
		default:
			refused++
		}
	}
	swaps := stop()
	t.Logf("%d tries, %d swaps: %d read inside, %d refused, %d returned outside bytes", swapTries, swaps, read, refused, leaked)
	if leaked != 0 {
		t.Errorf("read_file returned outside content %d times of %d", leaked, swapTries)
	}
	if swaps == 0 || read == 0 {
		t.Errorf("the race did not run: %d swaps, %d reads inside", swaps, read)
	}
}

func TestWriteFileNeverCreatesOutsideUnderSymlinkSwaps(t *testing.T) {
	ws, root, out := swapFixture(t, map[string]string{"keep.txt": "x\n"}, map[string]string{"secret.txt": "OUTSIDE\n"})
	r := newReg(t, Env{Workspace: ws})
	stop := startSwapping(t, root)
	written := 0
	for i := 0; i < swapTries; i++ {
		res := call(t, r, "write_file", map[string]any{"path": fmt.Sprintf("sub/new-%d.txt", i), "content": "written\n"})
		if !res.IsError {
			written++
		}
	}
	swaps := stop()
	names := listOutside(t, out)
	t.Logf("%d tries, %d swaps: %d written inside, outside folder holds %v", swapTries, swaps, written, names)
	if len(names) != 1 || names[0] != "secret.txt" {
		t.Errorf("write_file created %d files outside the workspace: %v", len(names)-1, names)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "secret.txt")); string(b) != "OUTSIDE\n" {
		t.Errorf("the outside file changed: %q", b)
	}
	inside, _ := os.ReadDir(filepath.Join(root, "sub"))
	if swaps == 0 || written == 0 || len(inside) != written+1 {
		t.Errorf("%d swaps, %d writes reported, %d files inside (want writes+1)", swaps, written, len(inside))
	}
}

func TestEditFileNeverWritesOutsideUnderSymlinkSwaps(t *testing.T) {
	ws, root, out := swapFixture(t, map[string]string{"edit.txt": "A\n"}, map[string]string{"edit.txt": "A\n"})
	r := newReg(t, Env{Workspace: ws})
	stop := startSwapping(t, root)
	edited := 0
	for i := 0; i < swapTries; i++ {
		res := call(t, r, "edit_file", map[string]any{"path": "sub/edit.txt", "old_string": "A", "new_string": "AB"})
		if !res.IsError {
			edited++
		}
	}
	swaps := stop()
	names := listOutside(t, out)
	got, _ := os.ReadFile(filepath.Join(out, "edit.txt"))
	t.Logf("%d tries, %d swaps: %d edits applied inside; outside folder %v holds %q", swapTries, swaps, edited, names, got)
	if string(got) != "A\n" || len(names) != 1 {
		t.Errorf("edit_file changed the outside folder: %v, edit.txt = %q", names, got)
	}
	in, _ := os.ReadFile(filepath.Join(root, "sub", "edit.txt"))
	if want := "A" + strings.Repeat("B", edited) + "\n"; string(in) != want {
		t.Errorf("inside edit.txt = %q; want %d edits applied: %q", in, edited, want)
	}
	if swaps == 0 || edited == 0 {
		t.Errorf("the race did not run: %d swaps, %d edits", swaps, edited)
	}
}

func TestListFilesNeverListsOutsideUnderSymlinkSwaps(t *testing.T) {
	outside := map[string]string{}
	for i := 0; i < 20; i++ {
		outside[fmt.Sprintf("OUTSIDE-%d.txt", i)] = "x\n"
	}
	ws, root, _ := swapFixture(t, map[string]string{"in-1.txt": "x\n", "in-2.txt": "x\n"}, outside)
	r := newReg(t, Env{Workspace: ws})
	stop := startSwapping(t, root)
	leaked, listed := 0, 0
	for i := 0; i < swapTries; i++ {
		args := map[string]any{"path": "sub"}
		if i%2 == 1 {
			args = map[string]any{"pattern": "**/*.txt"}
		}
		res := call(t, r, "list_files", args)
		if strings.Contains(res.Text, "OUTSIDE") {
			leaked++
		}
		if strings.Contains(res.Text, "in-1.txt") {
			listed++
		}
	}
	swaps := stop()
	t.Logf("%d tries, %d swaps: %d listings showed the inside files, %d named outside files", swapTries, swaps, listed, leaked)
	if leaked != 0 {
		t.Errorf("list_files named files outside the workspace %d times of %d", leaked, swapTries)
	}
	if swaps == 0 || listed == 0 {
		t.Errorf("the race did not run: %d swaps, %d listings", swaps, listed)
	}
}
