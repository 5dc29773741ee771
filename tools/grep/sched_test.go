package grep

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestBuildTakesNoTokenWhileASearchRuns: a build worker finishes its file
// and hands its token to a waiting search, then takes none until the
// search is done.
func TestBuildTakesNoTokenWhileASearchRuns(t *testing.T) {
	b := newBudget(1)
	stop := make(chan struct{})
	if !b.build(stop) {
		t.Fatal("build got no token from an idle budget")
	}
	got := make(chan int)
	var done func()
	go func() {
		var n int
		n, done = b.search(4)
		got <- n
	}()
	b.buildDone() // the file in hand is finished
	if n := <-got; n != 1 {
		t.Fatalf("search got %d tokens of a budget of 1", n)
	}
	var built atomic.Bool
	resumed := make(chan struct{})
	go func() {
		if b.build(stop) {
			built.Store(true)
			b.buildDone()
		}
		close(resumed)
	}()
	if built.Load() {
		t.Fatal("a build worker took a token while a search ran")
	}
	done()
	<-resumed
	if !built.Load() {
		t.Fatal("the build did not resume after the search")
	}
}

// TestCloseStopsABuildWaitingBehindASearch: Close returns while a search
// still holds every token, and the build it stopped never marks the index
// warm.
func TestCloseStopsABuildWaitingBehindASearch(t *testing.T) {
	dir := t.TempDir()
	var files []File
	root := openRoot(t, dir)
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("f%d.txt", i)
		os.WriteFile(filepath.Join(dir, name), []byte("some text\n"), 0o644)
		files = append(files, File{Name: name, Root: root, Rel: name})
	}
	_, done := workers.search(workers.size)
	idx := NewIndex(0)
	idx.Start(files, 1)
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	done()
	if idx.Warm() {
		t.Error("a build stopped by Close marked the index warm")
	}
}

// TestStartBuildsWarmAndSynced: a Start build ends warm, synced to the
// position it was given, with every file learned.
func TestStartBuildsWarmAndSynced(t *testing.T) {
	files := writeCorpus(t)
	idx := NewIndex(0)
	t.Cleanup(func() { idx.Close() })
	idx.Start(files, 42)
	idx.Wait()
	if !idx.Warm() || idx.Since() != 42 {
		t.Fatalf("after the build: warm %v, synced to %d; want warm, 42", idx.Warm(), idx.Since())
	}
	if n, _ := idx.Stats(); n != len(files) {
		t.Errorf("the index holds %d files; want %d", n, len(files))
	}
}

// TestWorkerBudgetFollowsGOMAXPROCS: the shared budget is GOMAXPROCS-1
// workers as GOMAXPROCS is when a search starts (the server raises it after
// package initialization), and at least one.
func TestWorkerBudgetFollowsGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	b := newBudget(0)
	for _, tc := range []struct{ procs, want int }{{4, 3}, {2, 1}, {1, 1}, {3, 2}} {
		runtime.GOMAXPROCS(tc.procs)
		n, done := b.search(100)
		done()
		if n != tc.want {
			t.Errorf("GOMAXPROCS %d: a search got %d workers; want %d", tc.procs, n, tc.want)
		}
	}
}

// TestSearchWaitsForTheTokensBuildsHold: a search that starts while build
// workers hold every token gets all of them once the workers finish the
// files in hand, not only the first one returned: it does not run the
// whole tree on one worker because a build happened to be mid-file.
func TestSearchWaitsForTheTokensBuildsHold(t *testing.T) {
	b := newBudget(2)
	stop := make(chan struct{})
	for range 2 {
		if !b.build(stop) {
			t.Fatal("build got no token from an idle budget")
		}
	}
	got := make(chan int)
	go func() {
		n, done := b.search(8)
		done()
		got <- n
	}()
	// Wait until the search is registered, then return one token and let
	// the search see it before the other comes back.
	for {
		b.mu.Lock()
		waiting := b.searching == 1
		b.mu.Unlock()
		if waiting {
			break
		}
		runtime.Gosched()
	}
	b.buildDone()
	for range 100 {
		runtime.Gosched()
	}
	select {
	case n := <-got:
		t.Fatalf("the search started with %d of 2 tokens while a build worker was finishing its file", n)
	default:
	}
	b.buildDone()
	if n := <-got; n != 2 {
		t.Fatalf("search got %d tokens; want 2", n)
	}
}

func TestBetweenSearchesWaitsForTheRunningSearchOrClose(t *testing.T) {
	x := NewIndex(1 << 20)
	if !x.BetweenSearches() {
		t.Fatal("with no search running it did not return true")
	}

	// A search runs: the wait ends only once it is done.
	_, done := workers.search(1)
	var ended atomic.Bool
	got := make(chan bool)
	entered := make(chan struct{})
	go func() {
		close(entered)
		ok := x.BetweenSearches()
		if !ended.Load() {
			t.Error("it returned while the search still ran")
		}
		got <- ok
	}()
	<-entered
	for range 1000 {
		runtime.Gosched() // give a wrong implementation the chance to return
	}
	ended.Store(true)
	done()
	if !<-got {
		t.Error("it returned false after the search ended")
	}

	// A search that never ends: Close ends the wait, with false.
	_, done = workers.search(1)
	defer done()
	go func() { got <- x.BetweenSearches() }()
	x.Close()
	if <-got {
		t.Error("it returned true at Close while a search ran")
	}
}
