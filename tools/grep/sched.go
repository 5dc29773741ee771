package grep

import (
	"runtime"
	"sync"
)

// workers is the one worker budget shared by every search and every index
// build of the process: GOMAXPROCS-1 (at least 1), or one per core in a
// server, which runs with Ps beyond its cores (tools.ReserveProtocolProc
// sets LimitWorkers), so however many tasks search at once, Ps are left
// for the protocol goroutines and the tasks' own work; the workers fill
// every core, at low priority (lowPriority), and the goroutine that
// answers the editor does not wait for a P.
var workers = newBudget(0)

// LimitWorkers sets the size of the worker budget to n (0: GOMAXPROCS-1,
// at least 1). A process that runs with more Ps than cores, to keep Ps
// free for other goroutines, sets it to its cores.
func LimitWorkers(n int) {
	workers.mu.Lock()
	workers.fixed = max(n, 0)
	workers.resize()
	workers.cond.Broadcast()
	workers.mu.Unlock()
}

// Workers is the size of the worker budget now.
func Workers() int { return workers.workersFor() }

// budget hands out worker tokens. Searches come first: while any search
// runs (or waits), build workers take no new file, so a build never slows
// a search by more than the file each build worker is finishing.
type budget struct {
	mu        sync.Mutex
	cond      *sync.Cond
	fixed     int // the size; 0: GOMAXPROCS-1
	size      int // guarded by mu
	free      int // tokens not held; guarded by mu
	building  int // tokens held by build workers; guarded by mu
	searching int // searches running or waiting; guarded by mu
}

// newBudget makes a budget of n tokens, or of GOMAXPROCS-1 (at least 1)
// when n is 0.
func newBudget(n int) *budget {
	b := &budget{fixed: n}
	b.cond = sync.NewCond(&b.mu)
	b.resize()
	return b
}

// resize follows GOMAXPROCS, which the server sets after package
// initialization. b.mu is held (or b is new). Tokens held beyond a smaller
// size are simply not handed out again until enough are returned.
func (b *budget) resize() {
	n := b.fixed
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	b.free += n - b.size
	b.size = n
}

// workersFor is the number of build workers: the budget's size now.
func (b *budget) workersFor() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resize()
	return b.size
}

// search registers a search and takes between 1 and want tokens, waiting
// for the first, and for every token a build worker holds: those come back
// as soon as the worker finishes the file in hand (it takes no new one
// while a search waits), and a search that started with only the tokens
// free at that instant would run the whole tree on fewer workers than the
// machine has because a build happened to be mid-file. Tokens other
// searches hold are not waited for. done returns them and ends the search.
func (b *budget) search(want int) (n int, done func()) {
	b.mu.Lock()
	b.resize()
	b.searching++
	want = max(want, 1)
	for b.free <= 0 || b.free < want && b.building > 0 {
		b.cond.Wait()
	}
	n = min(want, b.free)
	b.free -= n
	b.mu.Unlock()
	return n, func() {
		b.mu.Lock()
		b.free += n
		b.searching--
		b.cond.Broadcast()
		b.mu.Unlock()
	}
}

// build takes one token for one file of a build, waiting while any search
// runs or no token is free. It returns false when stop is closed first.
func (b *budget) build(stop <-chan struct{}) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resize()
	for b.searching > 0 || b.free <= 0 {
		select {
		case <-stop:
			return false
		default:
		}
		b.cond.Wait()
	}
	select {
	case <-stop:
		return false
	default:
	}
	b.free--
	b.building++
	return true
}

// buildDone returns a token taken by build.
func (b *budget) buildDone() {
	b.mu.Lock()
	b.free++
	b.building--
	b.cond.Broadcast()
	b.mu.Unlock()
}

// wake lets waiting build workers see that their stop channel closed.
func (b *budget) wake() {
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}

// BetweenSearches waits until no search of the process runs or waits for
// tokens, or until x is closed (then it returns false): work that would
// take the CPU from a search, such as building the filter's file list for
// 55,000 files, starts between two searches (a task searches, then waits
// for its model).
func (x *Index) BetweenSearches() bool {
	stop, done := x.stop, make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
			workers.wake()
		case <-done:
		}
	}()
	workers.mu.Lock()
	defer workers.mu.Unlock()
	for workers.searching > 0 {
		select {
		case <-stop:
			return false
		default:
		}
		workers.cond.Wait()
	}
	return true
}
