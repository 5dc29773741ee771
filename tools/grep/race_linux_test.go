package grep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/internal/linkswap"
)

// TestSymlinkSwapNeverLeadsOutside: while a goroutine keeps exchanging a
// folder and a file of the root with symlinks to an outside folder and an
// outside file (renameat2 RENAME_EXCHANGE, so the path is always there,
// one or the other), 1,000 searches without and 1,000 with the warm filter
// never print a line from outside.
func TestSymlinkSwapNeverLeadsOutside(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, text string) {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "sub", "a.txt"), "marker inside the root\n")
	write(filepath.Join(root, "f.txt"), "marker inside the root\n")
	write(filepath.Join(outside, "a.txt"), "marker OUTSIDE secret\n")
	write(filepath.Join(outside, "secret.txt"), "marker OUTSIDE secret\n")
	// The symlinks the folder and the file are exchanged with.
	if err := os.Symlink(outside, filepath.Join(root, "sublink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "flink")); err != nil {
		t.Fatal(err)
	}

	r := openRoot(t, root)
	files := []File{{Name: "sub/a.txt", Root: r, Rel: "sub/a.txt"}, {Name: "f.txt", Root: r, Rel: "f.txt"}}
	m, err := Compile(Query{Pattern: "marker", Literal: true})
	if err != nil {
		t.Fatal(err)
	}

	warm := NewIndex(0)
	t.Cleanup(func() { warm.Close() })
	if err := warm.Build(context.Background(), files); err != nil {
		t.Fatal(err)
	}

	stop := linkswap.Start(t, root, [][2]string{{"sub", "sublink"}, {"f.txt", "flink"}})

	inside, leaks := 0, 0
	for i := 0; i < 1000; i++ {
		for _, idx := range []*Index{nil, warm} {
			res, err := m.Search(context.Background(), Request{Files: files, Index: idx})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Files {
				for _, l := range f.Lines {
					if strings.Contains(l.Text, "OUTSIDE") {
						leaks++
					} else {
						inside++
					}
				}
			}
		}
	}
	swaps := stop()
	t.Logf("2000 searches, %d swaps: %d lines from inside, %d from outside", swaps, inside, leaks)
	if leaks > 0 {
		t.Errorf("%d searches printed a line from outside the root", leaks)
	}
	if swaps < 100 || inside == 0 {
		t.Errorf("the race did not happen: %d swaps, %d inside lines", swaps, inside)
	}
}
