package grep

import (
	"context"
	"errors"
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Index is a warm, memory-bounded trigram filter over file contents. For
// each file it keeps a small Bloom-style bit set of the file's trigrams
// (ASCII letters folded to lower case) and the stamp (size, mtime, inode)
// the bits were computed from. A search skips a file whose stamp is
// unchanged and whose bits rule out every literal the pattern needs; a
// changed file is read and its bits recomputed, so the filter never
// returns stale answers.
//
// One Index serves every task of a workspace: it owns its background build
// (Start), which outlives the task whose grep started it, runs on the
// shared worker budget behind every search, and stops only at Close. It
// also holds the Root handles files are read through. An Index is safe for
// concurrent use.
type Index struct {
	budget int64 // bytes of bit sets kept at most

	mu      sync.RWMutex // guards entries, used, arena and shut
	entries map[string]*entry
	used    int64 // bytes of live bit sets
	arena   arena
	shut    bool          // Close ran: no bit sets are kept any more
	gen     atomic.Uint64 // bumped (under mu) whenever entries change

	// mem owns the chunks the bit sets live in (off the Go heap on
	// Linux) and frees a chunk compact or Close stops using only once no
	// search can still read it (see offheap.go).
	mem *chunkMem

	// last holds the entries of the last complete trusted search, in the
	// order of its file list: the next search over the same list, with no
	// entry changed since, reads them in order instead of looking up every
	// name in the map (a few cache misses per file on a 50,000-file tree).
	last atomic.Pointer[aligned]

	warm    atomic.Bool
	suspect atomic.Bool   // files may have changed unseen: validate stamps once
	synced  atomic.Uint64 // the change-log position the entries reflect

	rootMu sync.Mutex // guards roots, closed, listVersion, list and skipped
	roots  map[string]*Root
	closed bool
	// The File list of a whole workspace and the names left out of it,
	// kept for the next search while the workspace lists the same files
	// (KeepFiles).
	listVersion []uint64
	list        []File
	skipped     []string

	buildMu  sync.Mutex // guards building
	building bool
	stop     chan struct{} // closed by Close: stops the build
	builds   sync.WaitGroup
}

// Synced records that the entries reflect every change up to seq of the
// caller's change log.
func (x *Index) Synced(seq uint64) { x.synced.Store(seq) }

// Since is the change-log position last given to Synced.
func (x *Index) Since() uint64 { return x.synced.Load() }

// Suspect marks that files may have changed without a change-log entry yet
// (e.g. a command just ran): the next search checks every file's stamp.
func (x *Index) Suspect() { x.suspect.Store(true) }

// TakeSuspect reports and clears the Suspect mark.
func (x *Index) TakeSuspect() bool { return x.suspect.Swap(false) }

// aligned is the entries of one file list, in its order.
type aligned struct {
	gen   uint64   // Index.gen the entries were read at
	names []string // the list's names, as the search was given them
	ents  []entry  // copies; bits == nil and st.size < 0: not indexed
}

// alignedFor returns the cached entries of files when the index has them
// for exactly this list (same strings, by address: the workspace hands out
// names from its stable file index) and nothing changed since.
func (x *Index) alignedFor(files []File) *aligned {
	a := x.last.Load()
	if a == nil || a.gen != x.gen.Load() || len(a.names) != len(files) {
		return nil
	}
	for i := range files {
		n := files[i].Name
		if len(n) != len(a.names[i]) || unsafe.StringData(n) != unsafe.StringData(a.names[i]) {
			return nil
		}
	}
	return a
}

// keepAligned stores ents, the entries of files read at generation gen,
// for the next search, unless entries changed since.
func (x *Index) keepAligned(files []File, ents []entry, gen uint64) {
	if x.gen.Load() != gen {
		return
	}
	names := make([]string, len(files))
	for i := range files {
		names[i] = files[i].Name
	}
	// Checked again and stored under the read lock: compact and Close
	// bump gen under the write lock before they retire the chunks ents
	// may point into, so copies read before either never land in last
	// after it.
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.gen.Load() == gen {
		x.last.Store(&aligned{gen: gen, names: names, ents: ents})
	}
}

// entry is what the index knows of one version of one file. Entries are
// never modified once stored (a search may hold one while it is replaced).
type entry struct {
	st     stamp
	binary bool
	bits   []uint64 // in the arena; nil: over budget, always a candidate
	// bits may point into memory outside the Go heap: read them only
	// between a search's pin and unpin (offheap.go).
}

// stamp identifies one version of a file on disk.
type stamp struct {
	size, mtime int64
	ino         uint64
}

// DefaultBudget is the bit-set memory an Index keeps when NewIndex gets 0.
// Files learned once it is used up get no bits: they are always read, so
// a larger tree is searched more slowly, never wrongly.
const DefaultBudget = 96 << 20

// NewIndex makes an empty index holding at most budget bytes of bit sets.
func NewIndex(budget int64) *Index {
	if budget <= 0 {
		budget = DefaultBudget
	}
	x := &Index{budget: budget, entries: make(map[string]*entry), roots: map[string]*Root{}, stop: make(chan struct{}), mem: newChunkMem()}
	x.arena.mem = x.mem
	// An Index dropped without Close gives its chunks back when the
	// collector finds it unreachable: no search can read them then, as a
	// search holds the Index until it unpins.
	runtime.AddCleanup(x, (*chunkMem).freeAll, x.mem)
	return x
}

// Root returns the handle on folder dir, opening it on first use; the
// Index closes it at Close.
func (x *Index) Root(dir string) (*Root, error) {
	x.rootMu.Lock()
	defer x.rootMu.Unlock()
	if x.closed {
		return nil, errors.New("grep: index closed")
	}
	if r := x.roots[dir]; r != nil {
		return r, nil
	}
	r, err := OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	x.roots[dir] = r
	return r, nil
}

// KeepFiles keeps files, the list of every file a whole-workspace search
// reads in a workspace whose file list has the given version, and skipped,
// the names left out of it, for later searches (KeptFiles). The Index owns
// the Roots the files name, so the list lives as long as they do.
func (x *Index) KeepFiles(version []uint64, files []File, skipped []string) {
	x.rootMu.Lock()
	defer x.rootMu.Unlock()
	if !x.closed {
		x.listVersion, x.list, x.skipped = slices.Clone(version), files, skipped
	}
}

// KeptFiles returns the lists given to KeepFiles with an equal version, or
// nils. Callers must not modify them.
func (x *Index) KeptFiles(version []uint64) (files []File, skipped []string) {
	x.rootMu.Lock()
	defer x.rootMu.Unlock()
	if x.closed || x.list == nil || !slices.Equal(version, x.listVersion) {
		return nil, nil
	}
	return x.list, x.skipped
}

// Warm reports whether Build has completed once, so searches consult and
// maintain the index.
func (x *Index) Warm() bool { return x != nil && x.warm.Load() }

// Stats reports the files indexed and the bytes of bit sets held.
func (x *Index) Stats() (files int, bytes int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.entries), x.used
}

// Start builds the index over files in the background unless a build is
// running already; after a complete build it calls Synced(seq). The build
// belongs to the Index, not to the caller: it keeps going when the task
// that started it ends, and stops only at Close.
func (x *Index) Start(files []File, seq uint64) {
	x.buildMu.Lock()
	defer x.buildMu.Unlock()
	select {
	case <-x.stop:
		return
	default:
	}
	if x.building {
		return
	}
	x.building = true
	x.builds.Add(1)
	go func() {
		defer x.builds.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-x.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if x.Build(ctx, files) == nil {
			x.Synced(seq)
		}
		// The build read every file through per-worker buffers; give the
		// pages it no longer needs back to the system now, once, rather
		// than hold them at the server's idle size.
		debug.FreeOSMemory()
		x.buildMu.Lock()
		x.building = false
		x.buildMu.Unlock()
	}()
}

// Wait waits for the Start build running now, if any.
func (x *Index) Wait() { x.builds.Wait() }

// Building reports whether a Start build is running.
func (x *Index) Building() bool {
	x.buildMu.Lock()
	defer x.buildMu.Unlock()
	return x.building
}

// Close stops the background build, waits for it, and closes the Roots.
func (x *Index) Close() error {
	x.buildMu.Lock()
	select {
	case <-x.stop:
	default:
		close(x.stop)
	}
	x.buildMu.Unlock()
	workers.wake()
	x.builds.Wait()
	x.rootMu.Lock()
	defer x.rootMu.Unlock()
	x.closed = true
	x.list, x.listVersion, x.skipped = nil, nil, nil
	x.dropBits()
	var err error
	for dir, r := range x.roots {
		err = errors.Join(err, r.Close())
		delete(x.roots, dir)
	}
	return err
}

// Build computes the bits of every file not yet indexed (or changed since),
// drops entries of files no longer listed, and marks the index warm. Its
// workers take tokens of the shared worker budget one file at a time and
// take none while a search runs. Files are indexed as they are on disk
// (a search reads an open buffer instead, whatever the index says).
func (x *Index) Build(ctx context.Context, files []File) error {
	keep := make(map[string]bool, len(files))
	for _, f := range files {
		keep[f.Name] = true
	}
	x.mu.Lock()
	for name, e := range x.entries {
		if !keep[name] {
			x.used -= int64(len(e.bits) * 8)
			delete(x.entries, name)
		}
	}
	x.gen.Add(1)
	x.mu.Unlock()
	keep = nil

	done := ctx.Done()
	unhook := context.AfterFunc(ctx, workers.wake)
	defer unhook()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w, n := 0, workers.workersFor(); w < n; w++ {
		wg.Add(1)
		lowPriority.run(func() {
			defer wg.Done()
			var buf []byte
			var big bigBuffer
			defer func() { big.release(&buf) }()
			var scratch, out []uint64
			for workers.build(done) {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					workers.buildDone()
					return
				}
				f := &files[i]
				if f.Root != nil {
					if st, err := statFile(f.Root, f.Rel); err == nil && x.lookup(f.Name, st) == nil {
						big.fit(&buf, st.size)
						if data, err := readFile(f.Root, f.Rel, -1, &buf, &big); err == nil {
							x.learn(f.Name, st, data, &scratch, &out)
						}
					}
				}
				workers.buildDone()
				// One large file must not pin its buffer for the whole
				// build: the mapping goes, and a heap buffer grown past
				// keptBuffer (a file that grew as it was read) too.
				big.release(&buf)
				if cap(buf) > keptBuffer {
					buf = nil
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.shut {
		x.warm.Store(true)
	}
	return nil
}

// Forget drops what the index knows of the file printed as name (for
// change notifications; the stamp check catches changes anyway).
func (x *Index) Forget(name string) {
	x.mu.Lock()
	if e, ok := x.entries[name]; ok {
		x.used -= int64(len(e.bits) * 8)
		delete(x.entries, name)
		x.gen.Add(1)
	}
	x.mu.Unlock()
}

// lookupTrustedAll sets out[i] to the entry of files[i] (st.size -1 when
// the index has none) without checking the disk, under one read lock.
func (x *Index) lookupTrustedAll(files []File, out []entry) {
	x.mu.RLock()
	for i := range files {
		if e := x.entries[files[i].Name]; e != nil {
			out[i] = *e
		} else {
			out[i] = entry{st: stamp{size: -1}}
		}
	}
	x.mu.RUnlock()
}

func (x *Index) lookup(name string, st stamp) *entry {
	x.mu.RLock()
	e := x.entries[name]
	x.mu.RUnlock()
	if e == nil || e.st != st {
		return nil
	}
	return e
}

// learn records the bits of one version of file name. scratch and out are
// the calling worker's buffers; the bits are copied into the arena.
func (x *Index) learn(name string, st stamp, content []byte, scratch, out *[]uint64) {
	e := &entry{st: st}
	var bits []uint64
	if isBinary(content) {
		e.binary = true
	} else {
		bits = trigramBits(content, scratch, out)
	}
	size := int64(len(bits) * 8)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.shut {
		return
	}
	old, ok := x.entries[name]
	if ok {
		x.used -= int64(len(old.bits) * 8)
	} else {
		name = strings.Clone(name) // not a substring of the caller's path list
	}
	if x.used+size <= x.budget {
		e.bits = x.arena.alloc(len(bits))
		copy(e.bits, bits)
		x.used += size
	}
	x.entries[name] = e
	x.gen.Add(1)
	if dead := x.arena.size - x.used; dead > 8<<20 && dead > x.used/2 {
		x.compact()
	}
}

// compact copies every live bit set into a new arena, so the space of
// forgotten and relearned files is freed, and retires the old arena's
// chunks: they are freed once no search that may hold copies of the old
// entries runs (chunkMem). x.mu is held.
func (x *Index) compact() {
	x.last.Store(nil) // its copies point into the old arena
	x.gen.Add(1)      // so no search stores its copies there again (keepAligned)
	fresh := arena{mem: x.mem}
	for name, e := range x.entries {
		if e.bits == nil {
			continue
		}
		c := *e
		c.bits = fresh.alloc(len(e.bits))
		copy(c.bits, e.bits)
		x.entries[name] = &c // entries are immutable: searches may hold e
	}
	old := x.arena
	x.arena = fresh
	x.mem.retire(old.chunks)
}

// dropBits forgets every entry for good and retires every chunk (Close):
// the index is cold from now on and learns nothing more.
func (x *Index) dropBits() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.shut = true
	x.warm.Store(false)
	x.last.Store(nil)
	x.gen.Add(1)
	clear(x.entries)
	x.used = 0
	old := x.arena
	x.arena = arena{mem: x.mem}
	x.mem.retire(old.chunks)
}

// arena holds the bit sets in large chunks: no allocation, size-class
// rounding or slice header per file beyond the entry's own.
type arena struct {
	mem    *chunkMem
	chunks []chunk  // every chunk this arena handed out memory from
	cur    []uint64 // the unused end of the newest chunk
	size   int64    // bytes handed out, live or dead
}

const chunkWords = 1 << 17 // 1 MiB

func (a *arena) alloc(n int) []uint64 {
	if n == 0 {
		return nil
	}
	a.size += int64(n * 8)
	if n > chunkWords/8 {
		c := a.mem.get(n)
		a.chunks = append(a.chunks, c)
		return c.words[:n:n]
	}
	if len(a.cur) < n {
		c := a.mem.get(chunkWords)
		a.chunks = append(a.chunks, c)
		a.cur = c.words
	}
	s := a.cur[:n:n]
	a.cur = a.cur[n:]
	return s
}

// A gram's key is the last three or four bytes, ASCII-folded, rolled into
// one word (k = k<<8 | folded[c]); triHash and quadHash mix it into a
// well-spread hash. The two never share a key (a trigram key has a zero
// top byte, a quadgram key gets a different multiplier), so both kinds
// live in one bit set. Files (trigramBits) and literals (gramsOf) use
// these same two functions.
func triHash(k uint32) uint32  { return mix((k & 0xFFFFFF) * triMul) }
func quadHash(k uint32) uint32 { return mix(k * quadMul) }

const triMul, quadMul = 0x9E3779B1, 0xC2B2AE35

func mix(h uint32) uint32 {
	h ^= h >> 15
	h *= 0x85EBCA6B
	h ^= h >> 13
	return h
}

// gramsOf returns the hashes a file must hold to contain s: its trigrams
// and its quadgrams (nil when s is too short to filter on).
func gramsOf(s string) []uint32 {
	if len(s) < 3 {
		return nil
	}
	out := make([]uint32, 0, 2*len(s)-5)
	k := uint32(folded[s[0]])<<8 | uint32(folded[s[1]])
	for i := 2; i < len(s); i++ {
		k = k<<8 | uint32(folded[s[i]])
		out = append(out, triHash(k))
		if i >= 3 {
			out = append(out, quadHash(k))
		}
	}
	return out
}

// A file's bit set holds its trigrams and its quadgrams. Trigrams alone let
// through any file that holds every three-byte piece of a literal somewhere
// (a 300 KB file of hashes or base64 holds nearly all of them); quadgrams
// say which pieces sit next to each other, so such files are read only when
// they hold the literal or much of it in place. On GOROOT/src copies this
// cuts the bytes a warm search of "Reader(" reads from 142 MB to 88 MB
// (53 MB of files hold it) and of "hashMightPanic" from 25 MB to 0.8 MB
// (all of it in files that hold it).
//
// bitsPerGram sizes a file's set: bits per distinct gram, more for larger
// files, since a file that passes the filter without a match costs a read
// of its whole size. With one hash per gram, a gram the file does not hold
// passes with probability 1-e^(-1/b): 39% at 2 bits, 28% at 3, 22% at 4.
// A 6-byte literal (4 trigrams, 3 quadgrams) then lets through ~0.14% of
// the small files that do not hold it and ~0.002% of the large ones.
// On copies of GOROOT/src: 47 MB for 53,000 files, 88 MB for 99,000.
func bitsPerGram(size int) int {
	switch {
	case size < 16<<10:
		return 2
	case size < 128<<10:
		return 3
	default:
		return 4
	}
}

// trigramBits computes a file's bit set into *out: it counts the distinct
// grams with a scratch set sized to the content, then sets one bit per
// gram in a set of about bitsPerGram bits per distinct gram (a whole
// number of words, position = hash * size >> 32). Both passes roll the
// last four folded bytes in one word (no per-gram call): the build pays
// this for every byte of the tree.
func trigramBits(content []byte, scratch, out *[]uint64) []uint64 {
	if len(content) < 3 {
		return nil
	}
	// The scratch set: a power of two >= 4 bits per byte, at most 8 Mbit.
	nbits := 64
	for nbits < 4*len(content) && nbits < 1<<23 {
		nbits <<= 1
	}
	words := nbits / 64
	if cap(*scratch) < words {
		*scratch = make([]uint64, words)
	}
	sc := (*scratch)[:words]
	clear(sc)
	mask := uint32(nbits - 1)
	k := uint32(folded[content[0]])<<8 | uint32(folded[content[1]])
	for i := 2; i < len(content); i++ {
		k = k<<8 | uint32(folded[content[i]])
		h := triHash(k) & mask
		sc[h>>6] |= 1 << (h & 63)
		if i >= 3 {
			h = quadHash(k) & mask
			sc[h>>6] |= 1 << (h & 63)
		}
	}
	set := 0
	for _, w := range sc {
		set += bits.OnesCount64(w)
	}
	n := max(1, (set*bitsPerGram(len(content))+63)/64)
	if cap(*out) < n {
		*out = make([]uint64, n)
	}
	o := (*out)[:n]
	clear(o)
	size := uint64(n * 64)
	k = uint32(folded[content[0]])<<8 | uint32(folded[content[1]])
	for i := 2; i < len(content); i++ {
		k = k<<8 | uint32(folded[content[i]])
		p := uint64(triHash(k)) * size >> 32
		o[p>>6] |= 1 << (p & 63)
		if i >= 3 {
			p = uint64(quadHash(k)) * size >> 32
			o[p>>6] |= 1 << (p & 63)
		}
	}
	return o
}

// folded maps a byte to its ASCII lower case.
var folded = func() (t [256]byte) {
	for c := range t {
		t[c] = lower(byte(c))
	}
	return t
}()

// mayMatch reports whether a file with these bits can hold a match.
func (m *Matcher) mayMatch(bits []uint64) bool {
	if bits == nil || len(m.lits) == 0 {
		return true
	}
	size := uint64(len(bits) * 64)
	for _, grams := range m.grams {
		if grams == nil {
			return true // a literal too short to filter on
		}
		ok := true
		for _, h := range grams {
			p := uint64(h) * size >> 32
			if bits[p>>6]&(1<<(p&63)) == 0 {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
