package grep

import (
	"bytes"
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// A lineDFA answers "does this line match?" for a regular expression
// without running Go's regexp engine per line: a deterministic automaton
// built lazily, one state per set of threads of the compiled program, with
// a transition table for ASCII bytes. One table lookup per byte, and a line
// whose threads all died (a pattern anchored with ^ that failed at its
// first bytes) is left at once for the next line.
//
// Why our own and not a library: the Go module proxy serves no faster
// RE2-compatible engine (coregex is refused, regexp2 backtracks and is
// slower); Go's regexp has no DFA, and its per-line Match or whole-file
// scan (a Pike VM) was what made regexes without a long literal slower than
// ripgrep. The automaton is built from the same regexp/syntax program as
// the regexp, so the two agree: syntax.Inst.MatchRune decides every rune
// (case folding included), non-ASCII input is decoded as Go's regexp
// decodes it (an invalid byte is U+FFFD), and the differential test against
// ripgrep runs both paths.
//
// Matches never span lines, so only whether a line holds a match matters:
// the threads form a set (no priorities) and the first match state ends
// the line. Assertions: ^, $ (line boundaries), \b and \B (ASCII word
// boundaries, as in Go's regexp: a state then also records whether the
// rune before was a word character) are handled; a program with \A or \z
// has none (newDFAProg returns nil) and the regexp runs as before.
//
// A dfaProg is shared by the workers of a search; each worker builds its
// own lineDFA (no locking on the hot path).
type dfaProg struct {
	prog *syntax.Prog
	word bool // the program has \b or \B
}

// newDFAProg compiles tree for the line automaton, or returns nil when the
// automaton cannot run it.
func newDFAProg(tree *syntax.Regexp) *dfaProg {
	prog, err := syntax.Compile(tree)
	if err != nil {
		return nil
	}
	p := &dfaProg{prog: prog}
	const line = syntax.EmptyBeginLine | syntax.EmptyEndLine
	const word = syntax.EmptyWordBoundary | syntax.EmptyNoWordBoundary
	for i := range prog.Inst {
		in := &prog.Inst[i]
		if in.Op != syntax.InstEmptyWidth {
			continue
		}
		op := syntax.EmptyOp(in.Arg)
		if op&^(line|word) != 0 {
			return nil
		}
		if op&word != 0 {
			p.word = true
		}
	}
	return p
}

// Transition codes in lineDFA.trans: a state's row (its index plus one,
// times 256: the offset of its row in the table), or one of these (all
// <= 0, so the hot loop tests one sign).
const (
	tUnknown = 0  // not computed yet
	tMatch   = -1 // the line matches
	tDead    = -2 // no thread left: the line cannot match
	tEOL     = -3 // '\n': the line ends
	// tSkip: to the idle state (see prepareSkip), from which the bytes
	// that change nothing are skipped without the table.
	tSkip = -4
)

// maxDFAStates bounds a worker's automaton (256 int32 per state: 2 MB);
// past it the cache is dropped and built again from the current state.
// A pattern whose automaton keeps outgrowing it (a{0,9} after a class
// repeated: one state per combination) drops it more than maxDFAResets
// times; the automaton then gives up (failed) and the regexp, which is
// faster when every few bytes make a new state, takes over.
// maxDFAThreads bounds the threads the states keep in all (4 bytes each, and
// as much again in the index's keys): a program of 50,000 instructions
// (a{1000} nested) must not make 2048 states of 50,000 threads.
const (
	maxDFAStates  = 2048
	maxDFAResets  = 3
	maxDFAThreads = 1 << 20
)

// Flags of a state.
const (
	fLineStart = 1 << iota // at a line's start: ^ holds
	fPrevWord              // the rune before was a word character (only with \b, \B)
)

type dstate struct {
	pcs   []uint32 // the threads: rune, match and empty-width instructions, sorted
	flags uint8
	// eol: -1 unknown, 0 no, 1 yes: whether the line matches if it ends here
	// (after a $ that was waiting for the line's end).
	eol int8
}

type lineDFA struct {
	p      *dfaProg
	states []dstate
	// trans is the table: row r (a multiple of 256, from 256) holds the
	// codes of state r/256-1 per byte; bytes from 0x80 stay tUnknown
	// (runes are decoded and stepped without the table).
	trans []int32
	index map[string]int32
	start int32 // state at a line's start (its index)
	// maxStates and maxResets: maxDFAStates and maxDFAResets (tests
	// change them).
	maxStates, maxResets int
	// The idle state of an unanchored pattern: the threads that only
	// start a match, in the middle of a line. Its row (0: none or not
	// prepared), and the bytes that leave it (esc).
	s0row     int32
	skipTried bool
	esc       [256]bool
	resets    int
	failed    bool // gave up: see maxDFAResets
	threads   int  // len(pcs) summed over states

	// scratch
	set      sparseSet
	stack    []uint32
	key      []byte
	resolved []uint32
}

func (p *dfaProg) newLineDFA() *lineDFA {
	d := &lineDFA{p: p, maxStates: maxDFAStates, maxResets: maxDFAResets}
	d.set = newSparseSet(len(p.prog.Inst))
	d.reset()
	return d
}

func (d *lineDFA) reset() {
	d.states = d.states[:0]
	d.threads = 0
	d.trans = append(d.trans[:0], make([]int32, 256)...) // row 0: unused
	d.index = map[string]int32{}
	d.s0row, d.skipTried = 0, false
	d.set.clear()
	d.closure(uint32(d.p.prog.Start), syntax.EmptyBeginLine)
	d.start = d.intern(fLineStart)
}

// closure adds pc and every instruction reachable from it without reading
// a rune, given the assertions that hold (flags), to d.set.
func (d *lineDFA) closure(pc uint32, flags syntax.EmptyOp) {
	stack := append(d.stack[:0], pc)
	insts := d.p.prog.Inst
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.set.has(pc) {
			continue
		}
		d.set.add(pc)
		in := &insts[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Arg, in.Out)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^flags == 0 {
				stack = append(stack, in.Out)
			}
		}
	}
	d.stack = stack
}

// intern makes d.set with flags a state (or finds it) and returns its
// index.
func (d *lineDFA) intern(flags uint8) int32 {
	insts := d.p.prog.Inst
	var pcs []uint32
	for _, pc := range d.set.dense {
		switch insts[pc].Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL,
			syntax.InstMatch, syntax.InstEmptyWidth:
			pcs = append(pcs, pc)
		}
	}
	slices.Sort(pcs)
	key := append(d.key[:0], flags)
	for _, pc := range pcs {
		key = append(key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
	}
	d.key = key
	if i, ok := d.index[string(key)]; ok {
		return i
	}
	i := int32(len(d.states))
	d.states = append(d.states, dstate{pcs: pcs, flags: flags, eol: -1})
	d.threads += len(pcs)
	d.index[string(key)] = i
	row := len(d.trans)
	d.trans = append(d.trans, make([]int32, 256)...)
	d.trans[row+'\n'] = tEOL
	return i
}

// code is the transition code for state i: tMatch, tDead or i+1.
func (d *lineDFA) code(i int32) int32 {
	st := &d.states[i]
	insts := d.p.prog.Inst
	alive := false
	for _, pc := range st.pcs {
		switch insts[pc].Op {
		case syntax.InstMatch:
			return tMatch
		case syntax.InstEmptyWidth:
			// A $ or \b waiting for what follows; a ^ mid-line never
			// holds.
			if syntax.EmptyOp(insts[pc].Arg)&syntax.EmptyBeginLine == 0 || st.flags&fLineStart != 0 {
				alive = true
			}
		default:
			alive = true
		}
	}
	if !alive {
		return tDead
	}
	return (i + 1) << 8
}

// step returns the code of the state after reading r in state i, in the
// middle of a line (no ^ holds after it; $ is decided at the line's end),
// and keeps it in the table when r is an ASCII byte other than '\n'.
func (d *lineDFA) step(i int32, r rune) int32 {
	if len(d.states) >= d.maxStates || d.threads >= maxDFAThreads {
		pcs, flags := d.states[i].pcs, d.states[i].flags
		if d.resets++; d.resets > d.maxResets {
			d.failed = true
		}
		d.reset()
		d.set.clear()
		for _, pc := range pcs {
			d.set.add(pc)
		}
		i = d.intern(flags)
	}
	insts := d.p.prog.Inst
	st := &d.states[i]
	pcs := st.pcs
	var next uint8
	if d.p.word {
		// \b and \B are decided now that the rune after them is known.
		w := syntax.IsWordChar(r)
		if w {
			next = fPrevWord
		}
		flags := wordFlags(st.flags&fPrevWord != 0, w)
		if st.flags&fLineStart != 0 {
			flags |= syntax.EmptyBeginLine
		}
		d.set.clear()
		for _, pc := range pcs {
			d.closure(pc, flags)
		}
		pcs = append(d.resolved[:0], d.set.dense...)
		d.resolved = pcs
		if slices.ContainsFunc(pcs, func(pc uint32) bool { return insts[pc].Op == syntax.InstMatch }) {
			return d.keep(i, r, tMatch) // a match ended before r
		}
	}
	d.set.clear()
	for _, pc := range pcs {
		in := &insts[pc]
		ok := false
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1:
			ok = in.MatchRune(r)
		case syntax.InstRuneAny:
			ok = true
		case syntax.InstRuneAnyNotNL:
			ok = r != '\n'
		}
		if ok {
			d.closure(in.Out, 0)
		}
	}
	// Unanchored: a new thread starts after every rune.
	d.closure(uint32(d.p.prog.Start), 0)
	return d.keep(i, r, d.code(d.intern(next)))
}

// keep stores code nx in the table for state i and r when r is an ASCII
// byte other than '\n', and returns nx.
func (d *lineDFA) keep(i int32, r rune, nx int32) int32 {
	if r < utf8.RuneSelf && r != '\n' {
		if nx == d.s0row && nx != 0 {
			d.trans[int(i+1)<<8|int(r)] = tSkip
		} else {
			d.trans[int(i+1)<<8|int(r)] = nx
		}
	}
	return nx
}

// prepareSkip finds the idle state and the bytes that leave it, filling
// its row of the table, when there is room for it in the cache. In the
// idle state (no match under way) most bytes of a text usually change
// nothing: scan then looks for the next byte that does with independent
// loads, faster than following the table byte by byte.
func (d *lineDFA) prepareSkip() {
	d.skipTried = true
	if len(d.states)+130 >= d.maxStates {
		return
	}
	if d.p.word {
		return // the idle state splits by the rune before: no skip
	}
	d.set.clear()
	d.closure(uint32(d.p.prog.Start), 0)
	s0 := d.intern(0)
	row := d.code(s0)
	if row <= 0 {
		return // anchored: dead in mid-line (or a match)
	}
	for b := range 128 {
		if b != '\n' && d.trans[int(row)|b] == tUnknown {
			d.step(s0, rune(b)) // at most 128 new states: no reset
		}
	}
	for b := range 256 {
		d.esc[b] = d.trans[int(row)|b] != row
	}
	d.s0row = row
	for k, nx := range d.trans {
		if nx == row {
			d.trans[k] = tSkip
		}
	}
}

// skipIdle returns the offset of the first byte from i that leaves the
// idle state (or len(content)).
func (d *lineDFA) skipIdle(content []byte, i int) int {
	esc := &d.esc
	for ; i+4 <= len(content); i += 4 {
		if esc[content[i]] {
			return i
		}
		if esc[content[i+1]] {
			return i + 1
		}
		if esc[content[i+2]] {
			return i + 2
		}
		if esc[content[i+3]] {
			return i + 3
		}
	}
	for ; i < len(content); i++ {
		if esc[content[i]] {
			return i
		}
	}
	return i
}

// atEOL reports whether the line matches when it ends in state i.
func (d *lineDFA) atEOL(i int32) bool {
	st := &d.states[i]
	if st.eol < 0 {
		flags := syntax.EmptyEndLine
		if st.flags&fLineStart != 0 {
			flags |= syntax.EmptyBeginLine // an empty line
		}
		if d.p.word {
			flags |= wordFlags(st.flags&fPrevWord != 0, false)
		}
		st.eol = b2i(d.eolMatch(i, flags))
	}
	return st.eol == 1
}

// wordFlags is \b or \B between a rune that is a word character or not
// (before) and another (after).
func wordFlags(before, after bool) syntax.EmptyOp {
	if before != after {
		return syntax.EmptyWordBoundary
	}
	return syntax.EmptyNoWordBoundary
}

func (d *lineDFA) eolMatch(i int32, flags syntax.EmptyOp) bool {
	insts := d.p.prog.Inst
	d.set.clear()
	for _, pc := range d.states[i].pcs {
		d.closure(pc, flags)
	}
	for _, pc := range d.set.dense {
		if insts[pc].Op == syntax.InstMatch {
			return true
		}
	}
	return false
}

func b2i(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

// matchLine reports whether line (without its line break) holds a match;
// ok is false when the automaton gave up (failed) on it.
func (d *lineDFA) matchLine(line []byte) (match, ok bool) {
	if d.failed {
		return false, false
	}
	return d.matchLine1(line), !d.failed
}

func (d *lineDFA) matchLine1(line []byte) bool {
	st := d.code(d.start)
	i := 0
	for st > 0 && i < len(line) {
		c := line[i]
		nx := d.trans[int(st)|int(c)]
		if nx > 0 {
			st = nx
			i++
			continue
		}
		if nx == tMatch || nx == tDead {
			st = nx
			break
		}
		if nx == tSkip {
			st = d.s0row
			i++
			continue
		}
		if c < utf8.RuneSelf {
			// tEOL: a '\n' inside a "line" is read as a rune
			// (not expected: callers cut lines at '\n').
			nx = d.step(st>>8-1, rune(c))
			i++
		} else {
			r, w := utf8.DecodeRune(line[i:])
			nx = d.step(st>>8-1, r)
			i += w
		}
		st = nx
	}
	switch st {
	case tMatch:
		return true
	case tDead:
		return false
	}
	return d.atEOL(st>>8 - 1)
}

// scan calls add(ls, le) for each matching line of content, in order,
// until add returns false. It returns false when the automaton gave up
// (failed) before the end: the caller searches content again otherwise.
func (d *lineDFA) scan(content []byte, add func(ls, le int) bool) bool {
	startCode := d.code(d.start)
	for ls := 0; ls < len(content); {
		matched := false
		i := ls
		if !d.skipTried {
			d.prepareSkip()
			startCode = d.code(d.start)
		}
		if startCode == tMatch {
			matched = true
		} else if startCode > 0 {
			st := startCode
			trans := d.trans
			if st == d.s0row {
				i = d.skipIdle(content, i)
			}
			for i < len(content) {
				nx := trans[int(st)|int(content[i])]
				if nx > 0 {
					st = nx
					i++
					continue
				}
				if nx == tSkip {
					st = d.s0row
					i = d.skipIdle(content, i+1)
					continue
				}
				if nx == tEOL {
					break
				}
				// Not in the table yet, or a rune from 0x80 up, or the
				// line's verdict.
				if nx == tUnknown {
					if c := content[i]; c < utf8.RuneSelf {
						nx = d.step(st>>8-1, rune(c))
						i++
					} else {
						r, w := utf8.DecodeRune(content[i:])
						nx = d.step(st>>8-1, r)
						i += w
					}
					if d.failed {
						return false
					}
					trans = d.trans // step may have grown or dropped it
					if nx > 0 {
						st = nx
						continue
					}
				}
				st = nx
				break
			}
			switch st {
			case tMatch:
				matched = true
			case tDead:
			default:
				// The line ended (i is at its '\n' or the end).
				matched = d.atEOL(st>>8 - 1)
			}
			// A dropped cache rebuilt the start state first: same code.
			startCode = d.code(d.start)
		}
		le := len(content)
		if i < len(content) {
			if content[i] == '\n' {
				le = i
			} else if j := bytes.IndexByte(content[i:], '\n'); j >= 0 {
				le = i + j
			}
		}
		if matched && !add(ls, le) {
			return true
		}
		ls = le + 1
	}
	return true
}

// sparseSet is a set of small integers with O(1) add, test and clear,
// remembering insertion order (Briggs and Torczon).
type sparseSet struct {
	sparse []uint32
	dense  []uint32
}

func newSparseSet(n int) sparseSet {
	return sparseSet{sparse: make([]uint32, n), dense: make([]uint32, 0, n)}
}

func (s *sparseSet) has(x uint32) bool {
	i := s.sparse[x]
	return int(i) < len(s.dense) && s.dense[i] == x
}

func (s *sparseSet) add(x uint32) {
	s.sparse[x] = uint32(len(s.dense))
	s.dense = append(s.dense, x)
}

func (s *sparseSet) clear() { s.dense = s.dense[:0] }
