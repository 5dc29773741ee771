//go:build linux

// Package linkswap races a reader against symlinks: it keeps exchanging
// paths of a tree with symlinks beside them (renameat2 RENAME_EXCHANGE,
// so each path always exists, as the real file or folder or as the link),
// for the tests that prove a search never follows a link swapped in under
// it.
package linkswap

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Start exchanges, below root, each pair of paths in turn, over and over
// on a goroutine of its own, until stop is called; stop returns how many
// exchanges were made. A failed exchange fails t and ends the swapping.
func Start(t testing.TB, root string, pairs [][2]string) (stop func() int64) {
	done := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, pair := range pairs {
				if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, pair[0]), unix.AT_FDCWD, filepath.Join(root, pair[1]), unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("renameat2: %v", err)
					return
				}
				swaps.Add(1)
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		return swaps.Load()
	}
}
