package grep

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// File is one file to search.
type File struct {
	Name string // as printed, and the index key: the workspace path
	// Root and Rel name the file on disk: Rel is slash-separated and
	// relative to Root, and the file is opened beneath Root (never by an
	// absolute path). Read unless Request.Buffers holds Name.
	Root *Root
	Rel  string
}

// Request is one search over a list of files.
type Request struct {
	Files []File
	// Feed, instead of Files, is a list still growing while it is
	// searched; the result is the one Files holding the complete list, in
	// the feed's order, would give.
	Feed *Feed
	// Buffers are the editor's unsaved texts by File.Name: searched instead
	// of the disk.
	Buffers    map[string]string
	MaxPerFile int // matching lines kept per file; 0 means 20
	MaxTotal   int // matching lines kept in total; 0 means 200
	Context    int // lines of context before and after each match
	// MaxLineLen cuts longer lines (bytes); 0 means 300.
	MaxLineLen int
	// Index, when set and warm, lets files whose trigrams rule out a match
	// be skipped without reading them.
	Index *Index
	// Trusted skips the per-file stamp check: the caller has already told
	// the index (Forget) about every file changed since it was synced.
	Trusted bool
}

// Line is one printed line: a match or its context.
type Line struct {
	Num   int    // 1-based
	Text  string // without the line break; cut to MaxLineLen
	Cut   int    // bytes cut from the end of Text
	Match bool   // false for a context line
}

// FileResult is what one file contributed.
type FileResult struct {
	Name    string
	Lines   []Line // in line order; context lines merged
	Matches int    // matching lines in Lines
	More    bool   // the file has more matching lines than MaxPerFile
}

// Result is the outcome of one search.
type Result struct {
	Files    []FileResult // files with matches, in request order
	Matches  int          // matching lines in Files
	Searched int          // text files searched (read or ruled out by the index)
	Skipped  int          // files not searched because the total cap was reached
	Binary   int          // binary files skipped
	Errors   int          // files that could not be read
	FirstErr error        // the first read error, for the message
	// Truncated: more matching lines exist than were kept (per file or in total).
	Truncated bool
	Filtered  int // files ruled out by the warm index without reading them
}

// maxFileBytes bounds the files grep reads.
const maxFileBytes = 64 << 20

const batch = 16

// Search runs m over req.Files on workers of the shared worker budget
// (waiting for one when every token is held). Results are deterministic:
// the first MaxTotal matching lines in file order.
func (m *Matcher) Search(ctx context.Context, req Request) (*Result, error) {
	if req.MaxPerFile <= 0 {
		req.MaxPerFile = 20
	}
	if req.MaxTotal <= 0 {
		req.MaxTotal = 200
	}
	if req.MaxLineLen <= 0 {
		req.MaxLineLen = 300
	}
	if req.Context < 0 {
		req.Context = 0
	}
	n := len(req.Files)
	// The files that matched, by their place in req.Files: a list of the
	// few, not a slot for each of the many (a slice of 55,000 pointers per
	// search was 40 MB of a searching server's allocations).
	var (
		perMu sync.Mutex
		per   []placedResult
	)
	feed := req.Feed
	var fed *fedResults
	if feed != nil {
		n = 0
		fed = newFedResults(feed.less, req.MaxTotal)
	}
	var (
		next     atomic.Int64
		cutoff   atomic.Int64
		found    atomic.Int64
		searched atomic.Int64
		binary   atomic.Int64
		filtered atomic.Int64
		errs     atomic.Int64
		skipped  atomic.Int64 // files of a feed not searched: they come after enough matches
		errOnce  sync.Once
		firstErr error
	)
	cutoff.Store(int64(n))
	idx := req.Index
	if idx != nil {
		// Bit sets may be read until the workers end (offheap.go).
		defer idx.unpin(idx.pin())
	}
	warm := idx != nil && idx.Warm()
	// A trusted warm search takes the index's entries in list order: from
	// the last search over the same list when nothing changed since, else
	// looked up here and kept for the next one.
	var ents []entry
	var gen uint64
	fresh := false
	if warm && req.Trusted && feed == nil {
		gen = idx.gen.Load()
		if a := idx.alignedFor(req.Files); a != nil {
			ents = a.ents
		} else {
			ents, fresh = make([]entry, n), true
		}
	}
	want := max(1, (n+batch-1)/batch)
	if feed != nil {
		want = workers.workersFor()
	}
	nw, done := workers.search(want)
	defer done()
	var wg sync.WaitGroup
	for w := 0; w < nw; w++ {
		wg.Add(1)
		lowPriority.run(func() {
			defer wg.Done()
			sc := scanner{m: m, req: &req}
			sc.workerBuffers = buffers.get()
			defer func() { buffers.put(sc.workerBuffers) }()
			// Counted here and added once: shared counters bumped per
			// file would bounce one cache line between the workers.
			var nSearched, nFiltered, nBinary, nSkipped int64
			defer func() {
				searched.Add(nSearched)
				filtered.Add(nFiltered)
				binary.Add(nBinary)
				skipped.Add(nSkipped)
			}()
			for {
				if ctx.Err() != nil {
					return
				}
				var list []File
				start := 0
				if feed != nil {
					if list = feed.take(batch); list == nil {
						return
					}
				} else {
					start = int(next.Add(batch)) - batch
					if start >= n {
						return
					}
					end := min(start+batch, n)
					if fresh {
						idx.lookupTrustedAll(req.Files[start:end], ents[start:end])
					}
					list = req.Files[start:end]
				}
				for k := range list {
					i := start + k
					if feed == nil && int64(i) >= cutoff.Load() {
						return
					}
					f := &list[k]
					if fed != nil && fed.beyond(f) {
						nSkipped++
						continue
					}
					var content []byte
					if text, ok := req.Buffers[f.Name]; ok {
						content = []byte(text)
					} else if f.Root == nil {
						errs.Add(1)
						errOnce.Do(func() { firstErr = fmt.Errorf("%s: no root folder to read it from", f.Name) })
						continue
					} else {
						var st stamp
						var known *entry
						if ents != nil && ents[i].st.size >= 0 {
							known = &ents[i]
						}
						if warm && known == nil {
							var err error
							st, err = statFile(f.Root, f.Rel)
							if err != nil {
								errs.Add(1)
								errOnce.Do(func() { firstErr = fmt.Errorf("%s: %w", f.Name, err) })
								continue
							}
							known = idx.lookup(f.Name, st)
						}
						if known != nil {
							if known.binary {
								nBinary++
								continue
							}
							if known.st.size < int64(m.shortestLit) || !m.mayMatch(known.bits) {
								nSearched++
								nFiltered++
								continue
							}
						}
						size := int64(-1)
						if known != nil {
							size = known.st.size
						}
						sc.big.fit(&sc.buf, size)
						data, err := readFile(f.Root, f.Rel, size, &sc.buf, &sc.big)
						if err != nil {
							errs.Add(1)
							errOnce.Do(func() { firstErr = fmt.Errorf("%s: %w", f.Name, err) })
							continue
						}
						content = data
						if warm && known == nil {
							idx.learn(f.Name, st, content, &sc.scratch, &sc.out)
						}
					}
					if isBinary(content) {
						nBinary++
						continue
					}
					nSearched++
					if fr := sc.scan(f.Name, content); fr != nil && fed != nil {
						fed.add(*f, fr)
					} else if fr != nil {
						perMu.Lock()
						per = append(per, placedResult{i, fr})
						perMu.Unlock()
						if found.Add(int64(fr.Matches)) >= int64(req.MaxTotal) {
							// Every file before next is claimed: they hold
							// enough matches, so later files need no search.
							c := next.Load()
							for {
								old := cutoff.Load()
								if c >= old || cutoff.CompareAndSwap(old, c) {
									break
								}
							}
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fresh && cutoff.Load() == int64(n) {
		idx.keepAligned(req.Files, ents, gen)
	}
	res := &Result{
		Searched: int(searched.Load()),
		Binary:   int(binary.Load()),
		Errors:   int(errs.Load()),
		FirstErr: firstErr,
		Filtered: int(filtered.Load()),
	}
	if c := int(cutoff.Load()); c < n {
		res.Skipped = n - c
		res.Truncated = true
	}
	slices.SortFunc(per, func(a, b placedResult) int { return cmp.Compare(a.i, b.i) })
	ordered := make([]*FileResult, len(per))
	for k, p := range per {
		ordered[k] = p.fr
	}
	if fed != nil {
		ordered = fed.ordered()
		res.Skipped = int(skipped.Load())
		res.Truncated = fed.dropped || res.Skipped > 0
	}
	for _, fr := range ordered {
		if fr == nil {
			continue
		}
		if fr.More {
			res.Truncated = true
		}
		if res.Matches >= req.MaxTotal {
			res.Truncated = true
			break
		}
		if left := req.MaxTotal - res.Matches; fr.Matches > left {
			trimMatches(fr, left)
			res.Truncated = true
		}
		res.Matches += fr.Matches
		res.Files = append(res.Files, *fr)
	}
	return res, nil
}

// placedResult is the result of the file at i in a search's list.
type placedResult struct {
	i  int
	fr *FileResult
}

// trimMatches keeps the first keep matching lines of fr and the context
// that follows the last of them.
func trimMatches(fr *FileResult, keep int) {
	seen := 0
	for i, l := range fr.Lines {
		if l.Match {
			if seen == keep {
				fr.Lines = fr.Lines[:i]
				break
			}
			seen++
		}
	}
	fr.Matches = keep
	fr.More = true
}

// binaryHead is how far isBinary looks for a NUL byte.
const binaryHead = 8000

func isBinary(content []byte) bool {
	head := content
	if len(head) > binaryHead {
		head = head[:binaryHead]
	}
	return bytes.IndexByte(head, 0) >= 0
}

// scanner is one worker of a search.
type scanner struct {
	m   *Matcher
	req *Request
	dfa *lineDFA // this worker's automaton for m.dfa, made on first use
	workerBuffers
}

// lineDFA is this worker's automaton, or nil when the matcher has none or
// the automaton gave up.
func (s *scanner) lineDFA() *lineDFA {
	if s.dfa == nil && s.m.dfa != nil {
		s.dfa = s.m.dfa.newLineDFA()
	}
	if s.dfa != nil && s.dfa.failed {
		return nil
	}
	return s.dfa
}

// verify reports whether a candidate line (found by the prefilter) matches.
func (s *scanner) verify(line []byte) bool {
	if s.m.pure {
		return true
	}
	if d := s.lineDFA(); d != nil {
		if match, ok := d.matchLine(line); ok {
			return match
		}
	}
	return s.m.re.Match(line)
}

// workerBuffers are kept from one search to the next (buffers), so a warm
// search reads its candidate files into memory that is already mapped
// rather than growing new buffers file by file.
type workerBuffers struct {
	buf     []byte
	big     bigBuffer // buf for a file over keptBuffer, off the heap
	scratch []uint64
	out     []uint64
	hits    []span
}

// buffers keeps the workers' buffers from one search to the next. Not a
// sync.Pool: a pool is emptied at every collection, and a server under
// its memory limit collects often while tasks search, so every search
// would allocate its buffers again, which brings the next collection
// sooner. At most one set per worker token is out at once.
var buffers = &bufferList{}

// keptBuffer is the largest read buffer kept between searches: a larger
// file's buffer is dropped after the search, not pinned for the server's
// life.
const keptBuffer = 1 << 20

type bufferList struct {
	mu   sync.Mutex
	free []workerBuffers
}

func (l *bufferList) get() workerBuffers {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.free)
	if n == 0 {
		return workerBuffers{}
	}
	b := l.free[n-1]
	l.free[n-1] = workerBuffers{}
	l.free = l.free[:n-1]
	return b
}

func (l *bufferList) put(b workerBuffers) {
	b.big.release(&b.buf)
	if cap(b.buf) > keptBuffer {
		b.buf = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) < 16 {
		l.free = append(l.free, b)
	}
}

type span struct{ start, end int } // a matching line: [start, end) without "\n"

// scan finds the matching lines of content; nil when there are none.
func (s *scanner) scan(name string, content []byte) *FileResult {
	m, max := s.m, s.req.MaxPerFile
	hits := s.hits[:0]
	more := false
	add := func(ls, le int) bool { // false: stop scanning
		if len(hits) == max {
			more = true
			return false
		}
		hits = append(hits, span{ls, le})
		return true
	}
	whole := len(content) > 0 && (m.whole || len(m.lits) == 0) && s.lineDFA() != nil
	if whole && !s.dfa.scan(content, add) {
		// The automaton gave up: search the file again without it.
		hits, more, whole = hits[:0], false, false
	}
	switch {
	case whole:
	case len(m.lits) == 1:
		for pos := 0; pos < len(content); {
			i := m.index(content[pos:], 0)
			if i < 0 {
				break
			}
			ls, le := lineAt(content, pos+i)
			if s.verify(content[ls:le]) {
				if !add(ls, le) {
					break
				}
			}
			pos = le + 1
		}
	case len(m.lits) > 1:
		next := make([]int, len(m.lits)) // next occurrence of each literal; -1 none
		for i := range next {
			next[i] = -2
		}
		for pos := 0; pos < len(content); {
			best := -1
			for i := range next {
				if next[i] == -2 || (next[i] >= 0 && next[i] < pos) {
					if j := m.index(content[pos:], i); j >= 0 {
						next[i] = pos + j
					} else {
						next[i] = -1
					}
				}
				if next[i] >= 0 && (best < 0 || next[i] < best) {
					best = next[i]
				}
			}
			if best < 0 {
				break
			}
			ls, le := lineAt(content, best)
			if s.verify(content[ls:le]) {
				if !add(ls, le) {
					break
				}
			}
			pos = le + 1
		}
	case len(content) == 0:
		// An empty file has no lines, so not even ^$ matches in it.
	default:
		for pos := 0; pos <= len(content); {
			loc := m.re.FindIndex(content[pos:])
			if loc == nil {
				break
			}
			ls, le := lineAt(content, pos+loc[0])
			if le == len(content) && ls == le && ls > 0 && content[ls-1] == '\n' {
				break // the empty "line" after a final newline is not a line
			}
			if !add(ls, le) {
				break
			}
			pos = le + 1
		}
	}
	s.hits = hits
	if len(hits) == 0 {
		return nil
	}
	return s.render(name, content, hits, more)
}

// lineAt returns the bounds of the line holding offset i.
func lineAt(content []byte, i int) (int, int) {
	ls := bytes.LastIndexByte(content[:i], '\n') + 1
	le := bytes.IndexByte(content[i:], '\n')
	if le < 0 {
		le = len(content)
	} else {
		le += i
	}
	return ls, le
}

// render turns hits into numbered lines with context.
func (s *scanner) render(name string, content []byte, hits []span, more bool) *FileResult {
	fr := &FileResult{Name: name, Matches: len(hits), More: more}
	c := s.req.Context
	lineNo, counted := 1, 0 // line number of offset counted
	numAt := func(off int) int {
		lineNo += bytes.Count(content[counted:off], []byte{'\n'})
		counted = off
		return lineNo
	}
	lastEmitted := 0 // offset just past the last emitted line's break
	for hi, h := range hits {
		num := numAt(h.start)
		// Context before: up to c lines, not before lastEmitted.
		if c > 0 {
			var before []span
			ls := h.start
			for k := 0; k < c && ls > lastEmitted; k++ {
				ps := bytes.LastIndexByte(content[:ls-1], '\n') + 1
				if ps < lastEmitted {
					break
				}
				before = append(before, span{ps, ls - 1})
				ls = ps
			}
			for k := len(before) - 1; k >= 0; k-- {
				fr.Lines = append(fr.Lines, s.line(content, before[k], num-k-1, false))
			}
		}
		fr.Lines = append(fr.Lines, s.line(content, h, num, true))
		lastEmitted = min(h.end+1, len(content))
		if c > 0 {
			stop := len(content)
			if hi+1 < len(hits) {
				stop = hits[hi+1].start
			}
			ls := h.end + 1
			for k := 1; k <= c && ls < stop; k++ {
				le := bytes.IndexByte(content[ls:], '\n')
				if le < 0 {
					le = len(content)
				} else {
					le += ls
				}
				fr.Lines = append(fr.Lines, s.line(content, span{ls, le}, num+k, false))
				lastEmitted = min(le+1, len(content))
				ls = le + 1
			}
		}
	}
	return fr
}

func (s *scanner) line(content []byte, sp span, num int, match bool) Line {
	text := content[sp.start:sp.end]
	text = bytes.TrimSuffix(text, []byte{'\r'})
	cut := 0
	if max := s.req.MaxLineLen; len(text) > max {
		// Cut at a rune boundary.
		end := max
		for end > 0 && text[end]&0xC0 == 0x80 {
			end--
		}
		cut = len(text) - end
		text = text[:end]
	}
	return Line{Num: num, Text: string(text), Cut: cut, Match: match}
}
