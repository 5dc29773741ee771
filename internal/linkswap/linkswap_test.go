//go:build linux

package linkswap

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSwapsAreSeenAndEndWithStop: while swapping, a reader of the path
// sees both the real file and the link's target; stop ends the swapping
// with both paths still there and counts the exchanges made.
func TestSwapsAreSeenAndEndWithStop(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "flink")); err != nil {
		t.Fatal(err)
	}
	stop := Start(t, root, [][2]string{{"f.txt", "flink"}})
	seen := map[string]bool{}
	// Read until both were seen (30 s at the most: a swapper that never
	// runs fails below).
	for deadline := time.Now().Add(30 * time.Second); len(seen) < 2 && time.Now().Before(deadline); {
		if b, err := os.ReadFile(filepath.Join(root, "f.txt")); err == nil {
			seen[string(b)] = true
		}
	}
	n := stop()
	if !seen["inside"] || !seen["outside"] || n == 0 {
		t.Errorf("read %v over %d exchanges; want both the file and the link's target", seen, n)
	}
	for _, name := range []string{"f.txt", "flink"} {
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			t.Errorf("%s after the exchanges: %v; want it there, as the file or the link", name, err)
		}
	}
}
