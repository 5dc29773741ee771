package grep

import (
	"container/heap"
	"slices"
	"sync"
)

// Feed is a file list that grows while a search reads it: the files of a
// workspace whose walk is still finding them. The producer calls Add as
// files are found and Close once every file was added; one Search reads
// it (Request.Feed). Its result is the one a search over the complete
// list, in the order less gives, would return: the files are searched in
// the order they come, and the matches are put in order at the end.
type Feed struct {
	less func(a, b *File) bool

	mu     sync.Mutex
	cond   *sync.Cond
	files  []File
	next   int // the first file no worker took yet
	closed bool
}

// NewFeed makes an empty feed whose complete list is ordered by less.
func NewFeed(less func(a, b *File) bool) *Feed {
	f := &Feed{less: less}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// Add appends files to the feed.
func (f *Feed) Add(files []File) {
	if len(files) == 0 {
		return
	}
	f.mu.Lock()
	f.files = append(f.files, files...)
	f.mu.Unlock()
	f.cond.Broadcast()
}

// Close says every file was added.
func (f *Feed) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cond.Broadcast()
}

// take waits for files no worker took yet and returns up to n of them (a
// copy), or nil once the feed is closed and drained.
func (f *Feed) take(n int) []File {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.next >= len(f.files) && !f.closed {
		f.cond.Wait()
	}
	end := min(f.next+n, len(f.files))
	if f.next >= end {
		return nil
	}
	out := slices.Clone(f.files[f.next:end])
	f.next = end
	if f.next == len(f.files) {
		// Every file handed out: the list need not be kept.
		f.files, f.next = f.files[:0], 0
	}
	return out
}

// fedResults keeps what a search over a Feed found, bounded: the files
// with matches that can still be among the first max matching lines of the
// complete list's order. A file is dropped once the kept files before it
// hold max matching lines; so is any later file (beyond).
type fedResults struct {
	less func(a, b *File) bool
	max  int

	mu      sync.Mutex
	kept    fedHeap // the kept files, the last in order on top
	matches int     // matching lines in kept
	dropped bool    // a file with matches was dropped or not searched
}

type fedFile struct {
	f  File
	fr *FileResult
}

// fedHeap is a max-heap in the complete list's order.
type fedHeap struct {
	less  func(a, b *File) bool
	items []fedFile
}

func (h *fedHeap) Len() int           { return len(h.items) }
func (h *fedHeap) Less(i, j int) bool { return h.less(&h.items[j].f, &h.items[i].f) }
func (h *fedHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *fedHeap) Push(x any)         { h.items = append(h.items, x.(fedFile)) }
func (h *fedHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func newFedResults(less func(a, b *File) bool, max int) *fedResults {
	return &fedResults{less: less, max: max, kept: fedHeap{less: less}}
}

// add keeps f's result unless it can no longer be shown.
func (r *fedResults) add(f File, fr *FileResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	heap.Push(&r.kept, fedFile{f, fr})
	r.matches += fr.Matches
	for r.kept.Len() > 1 {
		top := r.kept.items[0]
		if r.matches-top.fr.Matches < r.max {
			break
		}
		heap.Pop(&r.kept)
		r.matches -= top.fr.Matches
		r.dropped = true
	}
}

// beyond reports whether f comes after files that hold max matching lines
// already, so searching it cannot change the result.
func (r *fedResults) beyond(f *File) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.matches >= r.max && r.kept.Len() > 0 && r.less(&r.kept.items[0].f, f)
}

// ordered returns the kept results in the complete list's order.
func (r *fedResults) ordered() []*FileResult {
	items := r.kept.items
	slices.SortFunc(items, func(a, b fedFile) int {
		switch {
		case r.less(&a.f, &b.f):
			return -1
		case r.less(&b.f, &a.f):
			return 1
		}
		return 0
	})
	out := make([]*FileResult, len(items))
	for i := range items {
		out[i] = items[i].fr
	}
	return out
}
