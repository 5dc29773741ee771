package grep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// filterCorpus writes n files of pseudo-random words, every seventh also
// holding needleWord once, and returns them with the number that do.
func filterCorpus(t *testing.T, n int) (files []File, holding int) {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		var b strings.Builder
		for range 200 + r.IntN(400) {
			for range 3 + r.IntN(6) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
			b.WriteByte(" \n"[r.IntN(2)])
		}
		if i%7 == 0 {
			b.WriteString("\n" + needleWord + "\n")
			holding++
		}
		name := fmt.Sprintf("f%03d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Name: name, Rel: name})
	}
	root := openRoot(t, dir)
	for i := range files {
		files[i].Root = root
	}
	return files, holding
}

const needleWord = "QuuxNeedle"

// TestCompactRacingSearches: while one goroutine keeps compacting the
// filter (which retires the chunk every bit set lived in) and forgetting
// files (so searches learn them again into the arena), and at the end
// closes the index, four goroutines keep searching through it, trusted
// (entries copied in list order and kept for the next search) and not
// (entries looked up one by one). Every search finds every file that
// holds the word. Were a retired chunk freed while a search still held
// copies of entries pointing into it, a search would read unmapped memory
// (a fault that kills the test binary) or memory mapped again for other
// bits (a filter that drops files: a wrong count).
func TestCompactRacingSearches(t *testing.T) {
	files, holding := filterCorpus(t, 400)
	x := NewIndex(0)
	if err := x.Build(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	m, err := Compile(Query{Pattern: needleWord, Literal: true})
	if err != nil {
		t.Fatal(err)
	}
	const searchers, minSearches, minCompactions = 4, 50, 200
	var compactions, filtered atomic.Int64
	// A compaction follows each search that ends, while the other
	// searches are under way.
	ended := make(chan struct{}, 1)
	var searching sync.WaitGroup
	for s := range searchers {
		searching.Go(func() {
			for i := 0; i < minSearches || compactions.Load() < minCompactions; i++ {
				res, err := m.Search(context.Background(), Request{Files: files, Index: x, Trusted: (i+s)%2 == 0, MaxTotal: 1000})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Matches != holding || len(res.Files) != holding {
					t.Errorf("search %d of searcher %d: %d matches in %d files, want %d", i, s, res.Matches, len(res.Files), holding)
					return
				}
				filtered.Add(int64(res.Filtered))
				select {
				case ended <- struct{}{}:
				default:
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { searching.Wait(); close(done) }()
	r := rand.New(rand.NewPCG(3, 4))
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		case <-ended:
		}
		x.Forget(files[r.IntN(len(files))].Name)
		x.mu.Lock()
		x.compact()
		x.mu.Unlock()
		compactions.Add(1)
	}
	if filtered.Load() == 0 {
		t.Fatal("no search skipped a file by its bits: the filter was not read")
	}
	// Close while searches run: they go on without the filter.
	var closing sync.WaitGroup
	for s := range searchers {
		closing.Go(func() {
			for i := range minSearches {
				res, err := m.Search(context.Background(), Request{Files: files, Index: x, Trusted: (i+s)%2 == 0, MaxTotal: 1000})
				if err != nil || res.Matches != holding {
					t.Errorf("search %d around Close: %+v, %v", i, res, err)
					return
				}
			}
		})
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	closing.Wait()
	if n := x.OffHeap(); n != 0 {
		t.Errorf("%d bytes of bit sets still mapped after Close and every search ended", n)
	}
	t.Logf("%d compactions, %d files skipped by their bits", compactions.Load(), filtered.Load())
}
