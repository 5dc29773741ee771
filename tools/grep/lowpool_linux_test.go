package grep

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// niceOfThisThread is the nice value of the calling goroutine's thread
// (the kernel's getpriority answers 20-nice).
func niceOfThisThread(t *testing.T) int {
	t.Helper()
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - p
}

// idleWorkers is how many workers of p wait for a job.
func (p *lowPool) idleWorkers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

func TestLowPriorityWorkersKeepTheirThreadsBetweenJobs(t *testing.T) {
	p := &lowPool{}
	tids := map[int]bool{}
	for range 20 {
		var wg sync.WaitGroup
		var tid, nice int
		wg.Add(1)
		p.run(func() {
			defer wg.Done()
			tid, nice = unix.Gettid(), niceOfThisThread(t)
		})
		wg.Wait()
		if nice != 10 {
			t.Fatalf("a worker ran at nice %d, want 10", nice)
		}
		tids[tid] = true
		// The next job goes to this worker once it waits for one.
		for deadline := time.Now().Add(10 * time.Second); p.idleWorkers() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the worker never went idle")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if len(tids) != 1 {
		t.Fatalf("20 jobs in turn ran on %d threads, want 1 kept thread", len(tids))
	}
}

func TestLowPriorityNeverReachesTheCaller(t *testing.T) {
	runtime.LockOSThread() // the same thread is read before and after
	defer runtime.UnlockOSThread()
	before := niceOfThisThread(t)
	var wg sync.WaitGroup
	wg.Add(1)
	lowPriority.run(wg.Done)
	wg.Wait()
	if after := niceOfThisThread(t); after != before {
		t.Fatalf("the caller's thread went from nice %d to %d", before, after)
	}
}
