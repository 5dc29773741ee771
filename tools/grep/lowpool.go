package grep

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// lowPriority runs the workers of every search and build on goroutines
// locked to low-priority OS threads (lowerPriority). A thread is kept
// between searches, so no search pays for making threads and setting their
// priority; one idle for lowIdle ends with its goroutine, which takes the
// thread and its priority with it.
var lowPriority = &lowPool{}

// normalPriority is set by RunAtNormalPriority.
var normalPriority atomic.Bool

// RunAtNormalPriority makes the workers this process starts from now on
// run at the priority of the rest of the process: for a process that
// answers no editor (agentls tool), where a lowered priority only makes
// the search lose the CPU to every other program on the machine.
func RunAtNormalPriority() { normalPriority.Store(true) }

const lowIdle = 30 * time.Second

type lowPool struct {
	mu   sync.Mutex
	idle []chan func() // the idle workers' inboxes, most recent last
}

// run calls f on a low-priority worker: the most recently idle one when
// there is one, a new one otherwise. How many run at once is bounded by
// the callers, which hold a token of the worker budget for each.
func (p *lowPool) run(f func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		inbox := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		inbox <- f // buffered: never blocks
		return
	}
	p.mu.Unlock()
	go p.work(f)
}

func (p *lowPool) work(f func()) {
	if !normalPriority.Load() {
		lowerPriority()
	}
	inbox := make(chan func(), 1)
	timer := time.NewTimer(lowIdle)
	defer timer.Stop()
	for {
		f()
		f = nil // let the job's memory go while idle
		p.mu.Lock()
		p.idle = append(p.idle, inbox)
		p.mu.Unlock()
		timer.Reset(lowIdle)
		select {
		case f = <-inbox:
		case <-timer.C:
			p.mu.Lock()
			if i := slices.Index(p.idle, inbox); i >= 0 {
				p.idle = slices.Delete(p.idle, i, i+1)
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			f = <-inbox // run took this worker as the timer fired
		}
	}
}
