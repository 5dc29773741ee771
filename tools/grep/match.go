// Package grep is the search engine behind the grep tool: a line-oriented
// matcher (Go RE2 regular expressions or literal text) with a literal
// prefilter, parallel file scanning, and an optional warm trigram filter
// that lets selective queries skip most files without reading them.
//
// Matches never span lines: "." and negated classes do not match a newline,
// and a pattern that needs a newline is refused.
package grep

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Query is what to look for.
type Query struct {
	Pattern    string
	Literal    bool // Pattern is plain text, not a regular expression
	IgnoreCase bool
}

// ErrPattern reports a pattern that cannot be used; the message says why.
var ErrPattern = errors.New("bad pattern")

// Matcher is a compiled Query. It is safe for concurrent use.
type Matcher struct {
	query Query
	re    *regexp.Regexp // nil when the pattern is a pure literal
	// dfa decides lines for re when it can (see lineDFA); nil otherwise.
	dfa *dfaProg
	// lits is the prefilter: every matching line contains at least one of
	// them. Empty means no prefilter: the regexp runs over whole files.
	lits [][]byte
	fold bool // lits are searched ASCII-case-insensitively (lower-cased)
	// pure: a line containing a literal of lits is a match; re is not run.
	pure bool
	// rare[i] is the index in lits[i] of its rarest byte (fold search);
	// rare2[i] that of its next rarest, -1 for a one-byte literal: with
	// pairScan, both are looked for together (indexPair).
	rare  []int
	rare2 []int
	// grams[i] are the trigram and quadgram hashes of lits[i], for the
	// index filter.
	grams [][]uint32
	// shortestLit is the length of the shortest of lits: every match holds one,
	// so a shorter file holds none.
	shortestLit int
	// whole: scan whole files with the line automaton and leave lits to
	// the warm filter, because they are single bytes so common in text
	// (space, tab, e, t, ...) that finding each one and then its line
	// costs more than the automaton reading every byte once.
	whole bool
}

// commonRank is the byteRank from which a byte is too common to prefilter
// on (the 17 most common bytes of source code: space, e, t, r, s, n, tab,
// ...; byteRank is a rank, 255 the most common).
const commonRank = 256 - 17

// maxSet bounds the alternatives of a literal set and of cross products.
const maxSet = 16

// minLit is the shortest literal worth a prefilter. Even one byte pays:
// the regexp then runs on the few lines holding it instead of whole files.
const minLit = 1

// Compile checks and compiles q.
func Compile(q Query) (*Matcher, error) {
	if q.Pattern == "" {
		return nil, fmt.Errorf("%w: empty pattern", ErrPattern)
	}
	m := &Matcher{query: q}
	if q.Literal {
		if strings.ContainsAny(q.Pattern, "\n\r") {
			return nil, fmt.Errorf("%w: the text contains a line break; grep matches within one line, so search for one line of it", ErrPattern)
		}
		if !q.IgnoreCase || asciiFold(q.Pattern) {
			m.setLits([]string{q.Pattern}, q.IgnoreCase)
			m.pure = true
			return m, nil
		}
		// Unicode case folding needs the regexp engine.
		return compileRegexp(m, "(?i)"+regexp.QuoteMeta(q.Pattern))
	}
	expr := q.Pattern
	if q.IgnoreCase {
		expr = "(?i)" + expr
	}
	return compileRegexp(m, expr)
}

func compileRegexp(m *Matcher, expr string) (*Matcher, error) {
	flags := syntax.Perl &^ syntax.OneLine // ^ and $ match at line boundaries
	tree, err := syntax.Parse(expr, flags)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (Go RE2 syntax; set literal to search for the text as is)", ErrPattern, err)
	}
	tree = tree.Simplify()
	if err := lineOnly(tree); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPattern, err)
	}
	m.re = re
	m.dfa = newDFAProg(tree)
	// A regexp that is one literal needs no regexp at all.
	if tree.Op == syntax.OpLiteral {
		s := string(tree.Rune)
		fold := tree.Flags&syntax.FoldCase != 0
		if !fold || asciiFold(s) {
			m.setLits([]string{s}, fold)
			m.pure = true
			m.re, m.dfa = nil, nil
			return m, nil
		}
	}
	info := analyze(tree)
	set := info.req
	if info.exact != nil {
		set = info.exact
	}
	if set != nil && set.minLen() >= minLit {
		m.setLits(set.strs, set.fold)
	}
	if m.dfa != nil && len(m.lits) > 0 {
		m.whole = true
		for _, l := range m.lits {
			if len(l) > 1 || byteRank[l[0]] < commonRank {
				m.whole = false
			}
		}
	}
	return m, nil
}

// lineOnly rewrites tree so no part of it matches a newline: "." becomes
// "any but newline", classes lose "\n". A literal newline is an error.
func lineOnly(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return fmt.Errorf("%w: the pattern contains a line break; grep matches within one line", ErrPattern)
			}
		}
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 {
			return fmt.Errorf("%w: a character class matches only a line break; grep matches within one line", ErrPattern)
		}
		re.Rune = out
	}
	for _, sub := range re.Sub {
		if err := lineOnly(sub); err != nil {
			return err
		}
	}
	return nil
}

// litSet is a set of strings, one of which appears in every match.
type litSet struct {
	strs []string
	fold bool
}

func (s *litSet) minLen() int {
	if s == nil || len(s.strs) == 0 {
		return 0
	}
	n := len(s.strs[0])
	for _, x := range s.strs[1:] {
		n = min(n, len(x))
	}
	return n
}

// better reports whether a is a more selective prefilter than b.
func better(a, b *litSet) bool {
	if a == nil {
		return false
	}
	if b == nil {
		return true
	}
	if a.minLen() != b.minLen() {
		return a.minLen() > b.minLen()
	}
	if ra, rb := a.rarity(), b.rarity(); ra != rb {
		return ra < rb
	}
	return len(a.strs) < len(b.strs)
}

// rarity is how common the most common anchor byte of the set is.
func (s *litSet) rarity() int {
	r := 0
	for _, x := range s.strs {
		if x != "" {
			r = max(r, int(rankOf(x[rarest(x, s.fold)], s.fold)))
		}
	}
	return r
}

// litInfo describes a sub-expression: exact is the finite set of strings it
// matches (nil if unknown or too large); req is a set one of which appears
// in every match (nil if none is known).
type litInfo struct {
	exact *litSet
	req   *litSet
}

var emptyExact = litInfo{exact: &litSet{strs: []string{""}}}

func analyze(re *syntax.Regexp) litInfo {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return emptyExact
	case syntax.OpLiteral:
		return literalInfo(re)
	case syntax.OpCharClass:
		return classInfo(re)
	case syntax.OpCapture:
		return analyze(re.Sub[0])
	case syntax.OpPlus:
		sub := analyze(re.Sub[0])
		return litInfo{req: sub.required()}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			sub := analyze(re.Sub[0])
			return litInfo{req: sub.required()}
		}
		return litInfo{}
	case syntax.OpConcat:
		return concatInfo(re.Sub)
	case syntax.OpAlternate:
		return alternateInfo(re.Sub)
	}
	return litInfo{}
}

// required is the best "one of these appears" set of a sub-expression.
func (li litInfo) required() *litSet {
	if li.exact != nil && li.exact.minLen() > 0 && better(li.exact, li.req) {
		return li.exact
	}
	return li.req
}

func literalInfo(re *syntax.Regexp) litInfo {
	fold := re.Flags&syntax.FoldCase != 0
	if !fold {
		return litInfo{exact: &litSet{strs: []string{string(re.Rune)}}}
	}
	// ASCII case folding is what the prefilter can do; a rune with a
	// non-ASCII case variant (é/É, and also k/K/U+212A, s/S/U+017F) splits
	// the literal.
	var best string
	var cur []rune
	split := false
	for _, r := range re.Rune {
		if !asciiFoldRune(r) {
			split = true
			if len(string(cur)) > len(best) {
				best = string(cur)
			}
			cur = cur[:0]
			continue
		}
		cur = append(cur, r)
	}
	if len(string(cur)) > len(best) {
		best = string(cur)
	}
	if !split {
		return litInfo{exact: &litSet{strs: []string{lowerASCII(string(re.Rune))}, fold: true}}
	}
	if best == "" {
		return litInfo{}
	}
	return litInfo{req: &litSet{strs: []string{lowerASCII(best)}, fold: true}}
}

func classInfo(re *syntax.Regexp) litInfo {
	n := 0
	for i := 0; i+1 < len(re.Rune); i += 2 {
		n += int(re.Rune[i+1]-re.Rune[i]) + 1
		if n > 4 {
			return litInfo{}
		}
	}
	var strs []string
	for i := 0; i+1 < len(re.Rune); i += 2 {
		for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
			strs = append(strs, string(r))
		}
	}
	return litInfo{exact: &litSet{strs: strs}}
}

func concatInfo(subs []*syntax.Regexp) litInfo {
	run := &litSet{strs: []string{""}} // cross product of the current exact run
	allExact := true
	var best *litSet
	flush := func() {
		if run != nil && better(run, best) {
			best = run
		}
	}
	for _, sub := range subs {
		li := analyze(sub)
		if li.exact != nil && run != nil {
			if p := cross(run, li.exact); p != nil {
				run = p
				continue
			}
		}
		if li.exact != nil {
			// The product got too large: start a new run.
			flush()
			allExact = false
			run = li.exact
			continue
		}
		allExact = false
		flush()
		run = &litSet{strs: []string{""}}
		if r := li.required(); better(r, best) {
			best = r
		}
	}
	if allExact && run != nil {
		return litInfo{exact: run}
	}
	flush()
	return litInfo{req: best}
}

func cross(a, b *litSet) *litSet {
	if len(a.strs)*len(b.strs) > maxSet {
		return nil
	}
	out := &litSet{fold: a.fold || b.fold}
	for _, x := range a.strs {
		for _, y := range b.strs {
			s := x + y
			if out.fold {
				s = lowerASCII(s)
			}
			out.strs = append(out.strs, s)
		}
	}
	return out
}

func alternateInfo(subs []*syntax.Regexp) litInfo {
	exact := &litSet{}
	req := &litSet{}
	for _, sub := range subs {
		li := analyze(sub)
		if exact != nil {
			if li.exact != nil && len(exact.strs)+len(li.exact.strs) <= maxSet {
				exact.strs = append(exact.strs, li.exact.strs...)
				exact.fold = exact.fold || li.exact.fold
			} else {
				exact = nil
			}
		}
		if req != nil {
			r := li.required()
			if r == nil || r.minLen() == 0 || len(req.strs)+len(r.strs) > maxSet {
				req = nil
			} else {
				req.strs = append(req.strs, r.strs...)
				req.fold = req.fold || r.fold
			}
		}
	}
	if exact != nil {
		if exact.fold {
			for i, s := range exact.strs {
				exact.strs[i] = lowerASCII(s)
			}
		}
		return litInfo{exact: exact}
	}
	if req != nil && req.fold {
		for i, s := range req.strs {
			req.strs[i] = lowerASCII(s)
		}
	}
	return litInfo{req: req}
}

func (m *Matcher) setLits(strs []string, fold bool) {
	m.fold = fold
	seen := map[string]bool{}
	for _, s := range strs {
		if fold {
			s = lowerASCII(s)
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		m.lits = append(m.lits, []byte(s))
		r := rarest(s, fold)
		m.rare = append(m.rare, r)
		m.rare2 = append(m.rare2, nextRarest(s, fold, r))
		m.grams = append(m.grams, gramsOf(s))
		if m.shortestLit == 0 || len(s) < m.shortestLit {
			m.shortestLit = len(s)
		}
	}
}

// Literals reports the prefilter literals (for tests and diagnostics).
func (m *Matcher) Literals() (lits []string, fold, pure bool) {
	for _, l := range m.lits {
		lits = append(lits, string(l))
	}
	return lits, m.fold, m.pure
}

// asciiFold reports whether ASCII case folding finds every case variant of
// s: s is ASCII and none of its letters has a non-ASCII variant (U+212A
// KELVIN SIGN folds to k, U+017F LONG S to s).
func asciiFold(s string) bool {
	for _, r := range s {
		if !asciiFoldRune(r) {
			return false
		}
	}
	return true
}

// asciiFoldRune reports whether every simple case variant of r is r itself
// or an ASCII letter whose variants are ASCII too.
func asciiFoldRune(r rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf || r >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerASCII lowers the ASCII letters of s and keeps every other byte:
// the fold search compares non-ASCII bytes exactly.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// rarest returns the index in s of its rarest byte (byteRank). With fold,
// a letter is as common as its more common case: the fold search looks
// for both.
func rarest(s string, fold bool) int {
	best := 0
	for i := 1; i < len(s); i++ {
		if rankOf(s[i], fold) < rankOf(s[best], fold) {
			best = i
		}
	}
	return best
}

// nextRarest is the index of the rarest byte of s other than the one at
// not, or -1 when s has one byte.
func nextRarest(s string, fold bool, not int) int {
	best := -1
	for i := range len(s) {
		if i != not && (best < 0 || rankOf(s[i], fold) < rankOf(s[best], fold)) {
			best = i
		}
	}
	return best
}

func rankOf(c byte, fold bool) uint8 {
	if fold {
		return max(byteRank[lower(c)], byteRank[upper(c)])
	}
	return byteRank[c]
}

// indexFold finds needle (lower-cased ASCII) in hay ignoring ASCII case.
// rare is the index in needle of the byte to anchor on.
func indexFold(hay, needle []byte, rare int) int {
	if len(needle) == 0 {
		return 0
	}
	c := needle[rare]
	switch {
	case lower(c) == upper(c):
		return indexAnchored(hay, needle, rare, true, func(b []byte) int { return bytes.IndexByte(b, c) })
	case pairScan:
		return indexFoldOnePass(hay, needle, rare)
	}
	return indexFoldInStep(hay, needle, rare)
}

// indexFoldOnePass is indexFold for a letter anchor, with one pass that
// finds both cases (rg's memchr2); it needs pairScan.
func indexFoldOnePass(hay, needle []byte, rare int) int {
	lo, up := lower(needle[rare]), upper(needle[rare])
	return indexAnchored(hay, needle, rare, true, func(b []byte) int { return indexBytePair(b, lo, up) })
}

// indexAnchored finds needle in hay by one of its bytes (or two), at
// anchor in needle: next finds the next place of the anchor in a slice of
// hay (its index there, or -1), and the whole needle is compared there,
// ignoring ASCII case when fold (needle is lower-cased then).
func indexAnchored(hay, needle []byte, anchor int, fold bool, next func([]byte) int) int {
	n := len(needle)
	for off := anchor; off < len(hay); {
		i := next(hay[off:])
		if i < 0 {
			return -1
		}
		p := off + i
		start := p - anchor
		if start+n > len(hay) {
			return -1
		}
		if w := hay[start : start+n]; fold && equalFoldASCII(w, needle) || !fold && bytes.Equal(w, needle) {
			return start
		}
		off = p + 1
	}
	return -1
}

// indexFoldInStep is indexFold for a letter anchor, with a scan for each
// case advanced in step: every byte is read twice.
func indexFoldInStep(hay, needle []byte, rare int) int {
	n := len(needle)
	c := needle[rare]
	lo, up := lower(c), upper(c)
	nl, nu := -2, -2 // next occurrence of each; -2 means not searched yet
	off := rare
	for off < len(hay) {
		if nl != -1 && nl < off {
			if i := bytes.IndexByte(hay[off:], lo); i >= 0 {
				nl = off + i
			} else {
				nl = -1
			}
		}
		if nu != -1 && nu < off {
			if i := bytes.IndexByte(hay[off:], up); i >= 0 {
				nu = off + i
			} else {
				nu = -1
			}
		}
		p := nl
		if p < 0 || (nu >= 0 && nu < p) {
			p = nu
		}
		if p < 0 {
			return -1
		}
		start := p - rare
		if start+n > len(hay) {
			return -1
		}
		if start >= 0 && equalFoldASCII(hay[start:start+n], needle) {
			return start
		}
		off = p + 1
	}
	return -1
}

// equalFoldASCII compares a with needle, which is lower-cased.
func equalFoldASCII(a, needle []byte) bool {
	for i, c := range needle {
		if lower(a[i]) != c {
			return false
		}
	}
	return true
}

// index finds literal i of m in hay.
func (m *Matcher) index(hay []byte, i int) int {
	if pairScan && m.rare2[i] >= 0 {
		return indexPair(hay, m.lits[i], m.rare[i], m.rare2[i], m.fold)
	}
	if m.fold {
		return indexFold(hay, m.lits[i], m.rare[i])
	}
	if r := m.rare[i]; r > 0 && byteRank[m.lits[i][0]] >= rareGain+byteRank[m.lits[i][r]] {
		return indexRare(hay, m.lits[i], r)
	}
	return bytes.Index(hay, m.lits[i])
}

// rareGain: how many places rarer (byteRank) than a literal's first byte
// its rarest must be for index to anchor on it. bytes.Index looks for the
// first byte, then compares; on "err != nil {" that stops at every "e" of
// a Go file (a third of a cold search's CPU went there), where anchoring
// on "!" stops at each "!=".
const rareGain = 10

// indexPair finds needle in hay by its bytes at r1 and r2 together
// (indexPairAt, in both cases when fold: needle is lower-cased then), then
// comparing the whole needle there. It needs pairScan.
//
// One byte, however rare in code, stops a scan every few hundred bytes
// (a K or a k every 200 bytes of GOROOT/src), and each stop is a call;
// two at their distance in the literal rarely meet by chance.
func indexPair(hay, needle []byte, r1, r2 int, fold bool) int {
	i1, i2 := min(r1, r2), max(r1, r2)
	c1, c2 := needle[i1], needle[i2]
	a1, b1, a2, b2 := c1, c1, c2, c2
	if fold {
		a1, b1, a2, b2 = lower(c1), upper(c1), lower(c2), upper(c2)
	}
	d := i2 - i1
	return indexAnchored(hay, needle, i1, fold, func(b []byte) int { return indexPairAt(b, a1, b1, a2, b2, d) })
}

// indexRare finds needle in hay by looking for its byte at rare, then
// comparing the whole needle there.
func indexRare(hay, needle []byte, rare int) int {
	c := needle[rare]
	return indexAnchored(hay, needle, rare, false, func(b []byte) int { return bytes.IndexByte(b, c) })
}

// matchLine reports whether line (without its newline) matches.
func (m *Matcher) matchLine(line []byte) bool {
	if m.re != nil {
		return m.re.Match(line)
	}
	for i := range m.lits {
		if m.index(line, i) >= 0 {
			return true
		}
	}
	return false
}
