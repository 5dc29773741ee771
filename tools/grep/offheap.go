package grep

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// The filter's bit sets are most of a server's memory (about 50 MB on a
// 55,000-file workspace). On Linux they live in chunks mapped outside the
// Go heap (mapChunk), so they are not part of the heap the collector
// paces itself on, scans or counts against the soft memory limit, and the
// collector of a busy server works on a small heap; elsewhere they are
// ordinary slices.
//
// Nothing but this file frees a mapped chunk, and a read of an unmapped
// chunk is a fault that kills the server (a read of a chunk mapped again
// for other bits would be as bad: the filter would skip files that hold
// a match). A search reads bit sets without the index's lock: it copies
// entries, whose bits point into chunks, and reads them as its workers go;
// the copies of the last search are kept (Index.last) for the next one.
// So compact and Close never free the chunks they stop using themselves:
// they retire them, and chunkMem frees them later.
//
// Invariant: a retired chunk is unmapped only once every search that
// pinned the index before the chunk was retired has unpinned.
//
// Why that is enough: a search pins (Index.pin) before it first looks at
// an entry or at Index.last, and unpins after its workers have ended, its
// last read of a bit set. A chunk is retired only after nothing a search
// can find points into it any more: compact and Close replace the
// entries that did and clear Index.last under the index's write lock,
// and bump its generation there, so a search that copied old entries
// cannot put them back into Index.last (keepAligned stores under the read
// lock and only at the generation it read at). The retirement takes
// chunkMem.mu after that, and a later pin takes it too, so a search
// pinned after the retirement sees only the new entries and never
// reaches a retired chunk. A search pinned before it may hold copies of
// old entries: it holds the retired chunk.
//
// Pins are counted by epoch: each retirement closes the current epoch, so
// the retired chunks of epoch e can be freed as soon as no search pinned
// in an epoch <= e remains, however many searches pinned since.
// TestCompactRacingSearches and TestRetiredChunkUnmappedOnceReadersEnd
// prove it.
type chunkMem struct {
	mu      sync.Mutex
	epoch   uint64         // closed (bumped) by every retirement
	pins    map[uint64]int // searches pinned in each epoch and not yet unpinned
	retired []retiredSet   // oldest first
	held    map[*uint64]chunk
	mapped  atomic.Int64 // bytes of chunks mapped outside the Go heap
}

// chunk is one piece of memory bit sets are handed out from.
type chunk struct {
	words  []uint64
	mapped bool // outside the Go heap: unmapChunk gives it back
}

// retiredSet is the chunks retired at the end of one epoch.
type retiredSet struct {
	epoch  uint64
	chunks []chunk
}

func newChunkMem() *chunkMem {
	return &chunkMem{pins: map[uint64]int{}, held: map[*uint64]chunk{}}
}

// get returns a zeroed chunk of at least n words.
func (m *chunkMem) get(n int) chunk {
	c := mapChunk(n, false)
	if !c.mapped {
		return c
	}
	m.mu.Lock()
	m.held[unsafe.SliceData(c.words)] = c
	m.mu.Unlock()
	m.mapped.Add(int64(len(c.words) * 8))
	return c
}

// pin marks a search that may read bit sets from now until unpin(epoch).
func (m *chunkMem) pin() (epoch uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pins[m.epoch]++
	return m.epoch
}

// unpin ends the pin of a search and frees what no pinned search can
// still read.
func (m *chunkMem) unpin(epoch uint64) {
	m.mu.Lock()
	if m.pins[epoch]--; m.pins[epoch] <= 0 {
		delete(m.pins, epoch)
	}
	free := m.reclaimable()
	m.mu.Unlock()
	m.free(free)
}

// retire hands over chunks nothing reachable from the index points into
// any more: they are freed once the searches pinned until now have
// unpinned (at once when none is pinned).
func (m *chunkMem) retire(chunks []chunk) {
	if len(chunks) == 0 {
		return
	}
	m.mu.Lock()
	m.retired = append(m.retired, retiredSet{epoch: m.epoch, chunks: chunks})
	m.epoch++
	free := m.reclaimable()
	m.mu.Unlock()
	m.free(free)
}

// reclaimable takes out of m.retired the chunks retired before the epoch
// of the oldest pinned search. m.mu is held.
func (m *chunkMem) reclaimable() []chunk {
	oldest := m.epoch
	for e := range m.pins {
		oldest = min(oldest, e)
	}
	var free []chunk
	i := 0
	for ; i < len(m.retired) && m.retired[i].epoch < oldest; i++ {
		free = append(free, m.retired[i].chunks...)
		m.retired[i] = retiredSet{}
	}
	m.retired = m.retired[i:]
	if len(m.retired) == 0 {
		m.retired = nil
	}
	for _, c := range free {
		if c.mapped {
			delete(m.held, unsafe.SliceData(c.words))
		}
	}
	return free
}

func (m *chunkMem) free(chunks []chunk) {
	for _, c := range chunks {
		if c.mapped {
			m.mapped.Add(-int64(len(c.words) * 8))
			unmapChunk(c)
		}
	}
}

// freeAll frees every chunk, live or retired: the cleanup of an Index
// the collector found unreachable, so no search can read any of them.
func (m *chunkMem) freeAll() {
	m.mu.Lock()
	var free []chunk
	for p, c := range m.held {
		free = append(free, c)
		delete(m.held, p)
	}
	m.retired = nil
	m.mu.Unlock()
	m.free(free)
}

// pin marks the calling search as one that may read the index's bit sets
// until unpin(epoch): no chunk it can reach is freed before then. Search
// pins before it looks at any entry and unpins after its workers end.
func (x *Index) pin() (epoch uint64) { return x.mem.pin() }

// unpin ends a pin.
func (x *Index) unpin(epoch uint64) { x.mem.unpin(epoch) }

// OffHeap reports the bytes of bit-set chunks mapped outside the Go heap,
// live or retired and not yet freed (0 where chunks are Go slices).
func (x *Index) OffHeap() int64 { return x.mem.mapped.Load() }

// bigBuffer is one worker's read buffer for files larger than keptBuffer,
// in memory mapped outside the Go heap on Linux: the few megabyte-sized
// files of a tree are read by every search whose pattern they may match,
// and a heap buffer for each (allocated, zeroed, then collected) was a
// third of what a searching server allocated. What a worker reads into it
// is used only until it reads its next file (matching lines are copied
// out as strings, bits into the arena), and the mapping is unmapped only
// when the worker asks for a larger one or is done with it (release).
//
// The worker's heap buffer, which the mapping stands in for while it is
// mapped, is kept and given back at release: dropping it made the next
// search grow a new one from 64 KiB by doubling, 130 MB of a searching
// server's 1.1 GB of allocations in the door benchmark's editor run.
type bigBuffer struct {
	c    chunk
	heap []byte // the heap buffer *buf held before the mapping, if any
}

// fit makes *buf hold a file of size bytes (readAll wants one byte more),
// from a fresh mapping when the file is larger than keptBuffer and *buf
// is too small; smaller files keep the heap buffer readAll grows.
func (b *bigBuffer) fit(buf *[]byte, size int64) {
	if size <= keptBuffer || int64(cap(*buf)) > size {
		return
	}
	b.release(buf)
	if cap(*buf) <= keptBuffer {
		b.heap = *buf
	}
	n := int(size) + 1 + int(size)/4
	b.c = mapChunk((n+7)/8, true)
	*buf = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b.c.words))), len(b.c.words)*8)[:0]
}

// release unmaps the mapping, if any, and gives *buf back the heap buffer
// it held before, when *buf is the mapping (readAll may have replaced it
// with a heap buffer for a file that grew, which stays).
func (b *bigBuffer) release(buf *[]byte) {
	if b.c.words == nil {
		return
	}
	if unsafe.Pointer(unsafe.SliceData(*buf)) == unsafe.Pointer(unsafe.SliceData(b.c.words)) {
		*buf = b.heap
	}
	b.heap = nil
	if b.c.mapped {
		unmapChunk(b.c)
	}
	b.c = chunk{}
}
