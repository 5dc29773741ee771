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
// the line. Assertions: ^ and $ (line boundaries) are handled; a program
// with \A, \z, \b or \B has none (newDFAProg returns nil) and the regexp
// runs as before.
//
// A dfaProg is shared by the workers of a search; each worker builds its
// own lineDFA (no locking on the hot path).
type dfaProg struct {
	prog *syntax.Prog
}

// newDFAProg compiles tree for the line automaton, or returns nil when the
// automaton cannot run it.
func newDFAProg(tree *syntax.Regexp) *dfaProg {
	prog, err := syntax.Compile(tree)
	if err != nil {
		return nil
	}
	for i := range prog.Inst {
		in := &prog.Inst[i]
		if in.Op == syntax.InstEmptyWidth && syntax.EmptyOp(in.Arg)&^(syntax.EmptyBeginLine|syntax.EmptyEndLine) != 0 {
			return nil
		}
	}
	return &dfaProg{prog: prog}
}

// Transition codes in lineDFA.trans: a state's index plus one, or one of
// these (all <= 0, so the hot loop tests one sign).
const (
	tUnknown = 0  // not computed yet
	tMatch   = -1 // the line matches
	tDead    = -2 // no thread left: the line cannot match
	tEOL     = -3 // '\n': the line ends
)

// maxDFAStates bounds a worker's automaton (128 int32 per state: 2 MB);
// past it the cache is dropped and built again from the current state.
const maxDFAStates = 4096

type dstate struct {
	pcs []uint32 // the threads: rune, match and empty-width instructions, sorted
	// eol: -1 unknown, 0 no, 1 yes: whether the line matches if it ends here
	// (after a $ that was waiting for the line's end).
	eol int8
}

type lineDFA struct {
	p      *dfaProg
	states []dstate
	trans  []int32 // len(states)*128: per state, per ASCII byte
	index  map[string]int32
	start  int32 // state at a line's start (its index)
	// maxStates bounds the cache: maxDFAStates (tests make it smaller).
	maxStates int
	// startEmpty: the start state's verdict at the end of an empty line,
	// where ^ and $ both hold. -1 unknown.
	startEmpty int8

	// scratch
	set   sparseSet
	stack []uint32
	key   []byte
}

func (p *dfaProg) newLineDFA() *lineDFA {
	d := &lineDFA{p: p, maxStates: maxDFAStates}
	d.set = newSparseSet(len(p.prog.Inst))
	d.reset()
	return d
}

func (d *lineDFA) reset() {
	d.states = d.states[:0]
	d.trans = d.trans[:0]
	d.index = map[string]int32{}
	d.startEmpty = -1
	d.set.clear()
	d.closure(uint32(d.p.prog.Start), syntax.EmptyBeginLine)
	d.start = d.intern()
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

// intern makes d.set a state (or finds it) and returns its index.
func (d *lineDFA) intern() int32 {
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
	key := d.key[:0]
	for _, pc := range pcs {
		key = append(key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
	}
	d.key = key
	if i, ok := d.index[string(key)]; ok {
		return i
	}
	i := int32(len(d.states))
	d.states = append(d.states, dstate{pcs: pcs, eol: -1})
	d.index[string(key)] = i
	row := len(d.trans)
	d.trans = append(d.trans, make([]int32, 128)...)
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
			// A $ waiting for the line's end; a ^ mid-line never holds.
			if syntax.EmptyOp(insts[pc].Arg)&syntax.EmptyBeginLine == 0 {
				alive = true
			}
		default:
			alive = true
		}
	}
	if !alive {
		return tDead
	}
	return i + 1
}

// step returns the code of the state after reading r in state i, in the
// middle of a line (no ^ holds after it; $ is decided at the line's end),
// and keeps it in the table when r is an ASCII byte other than '\n'.
func (d *lineDFA) step(i int32, r rune) int32 {
	if len(d.states) >= d.maxStates {
		pcs := d.states[i].pcs
		d.reset()
		d.set.clear()
		for _, pc := range pcs {
			d.set.add(pc)
		}
		i = d.intern()
	}
	insts := d.p.prog.Inst
	pcs := d.states[i].pcs
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
	nx := d.code(d.intern())
	if r < utf8.RuneSelf && r != '\n' {
		d.trans[int(i)<<7|int(r)] = nx
	}
	return nx
}

// atEOL reports whether the line matches when it ends in state i; empty:
// the line is empty (i is the start state and ^ holds too).
func (d *lineDFA) atEOL(i int32, empty bool) bool {
	if empty {
		if d.startEmpty < 0 {
			d.startEmpty = b2i(d.eolMatch(i, syntax.EmptyBeginLine|syntax.EmptyEndLine))
		}
		return d.startEmpty == 1
	}
	st := &d.states[i]
	if st.eol < 0 {
		st.eol = b2i(d.eolMatch(i, syntax.EmptyEndLine))
	}
	return st.eol == 1
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

// matchLine reports whether line (without its line break) holds a match.
func (d *lineDFA) matchLine(line []byte) bool {
	st := d.start
	if c := d.code(st); c == tMatch {
		return true
	} else if c == tDead {
		return false
	}
	i := 0
	for i < len(line) {
		c := line[i]
		var nx int32
		if c < utf8.RuneSelf {
			nx = d.trans[int(st)<<7|int(c)]
			if nx == tUnknown || nx == tEOL {
				// tEOL: a '\n' inside a "line" is read as a rune
				// (not expected: callers cut lines at '\n').
				nx = d.step(st, rune(c))
			}
			i++
		} else {
			r, w := utf8.DecodeRune(line[i:])
			nx = d.step(st, r)
			i += w
		}
		switch {
		case nx == tMatch:
			return true
		case nx == tDead:
			return false
		}
		st = nx - 1
	}
	return d.atEOL(st, len(line) == 0)
}

// scan calls add(ls, le) for each matching line of content, in order,
// until add returns false.
func (d *lineDFA) scan(content []byte, add func(ls, le int) bool) {
	startCode := d.code(d.start)
	for ls := 0; ls < len(content); {
		matched := false
		i := ls
		switch startCode {
		case tMatch:
			matched = true
		case tDead:
		default:
			st := d.start
		line:
			for {
				if i == len(content) {
					matched = d.atEOL(st, i == ls)
					break
				}
				c := content[i]
				if c < utf8.RuneSelf {
					nx := d.trans[int(st)<<7|int(c)]
					if nx > 0 {
						st = nx - 1
						i++
						continue
					}
					switch nx {
					case tEOL:
						matched = d.atEOL(st, i == ls)
						break line
					case tUnknown:
						nx = d.step(st, rune(c))
					}
					i++
					switch nx {
					case tMatch:
						matched = true
						break line
					case tDead:
						break line
					}
					st = nx - 1
					continue
				}
				r, w := utf8.DecodeRune(content[i:])
				nx := d.step(st, r)
				i += w
				switch nx {
				case tMatch:
					matched = true
					break line
				case tDead:
					break line
				}
				st = nx - 1
			}
			// A new state may have dropped the table: d.start is still
			// the start state (reset rebuilds it first).
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
			return
		}
		ls = le + 1
	}
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
