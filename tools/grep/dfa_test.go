package grep

import (
	"bytes"
	"context"
	"math/rand"
	"strings"
	"testing"
)

// TestLineDFAAgreesWithRegexp: for generated patterns and lines (ASCII,
// non-ASCII, invalid UTF-8, empty, "\r"), the line automaton decides every
// line as Go's regexp does, line by line (matchLine) and over whole texts
// (scan), including after its state cache was dropped.
func TestLineDFAAgreesWithRegexp(t *testing.T) {
	rnd := rand.New(rand.NewSource(29))
	patterns := []string{
		`^\s*$`, `^$`, `^[ \t]+$`, `\d{4}`, `^\s*\d{6,}\s*$`, `[A-Z]{3}\d{4}`, `x*`, `$`, `^`, `$^`, `^$^$`,
		`err != nil \{\s*return`, `(?i)kelvin`, `(?i)straße`, `[^a-z]{3}`, `.$`, `^.`, `a.c`, `[éÉ]+`,
		`(?i)s|k`, `(foo|bar)+baz`, `\s+$`, `^\S+$`, `[[:punct:]]{2}`, `(?i)[k]elvin|ſ`, `a?b?c?$`, `\w+_\d{3}\(`,
		`\bfoo\b`, `\b\d{4}\b`, `\Bar`, `\b`, `\B`, `^\b`, `\b$`, `\B$`, `^\B`, `\b^`, `$\b`, `x\b|\by`, `(?i)\bk`,
		`\b[A-Z]{2,}\b`, `\w+\b\s`, `é\b`, `\bé`, `\b\B`, `a\Bb`, `\b.\b`,
	}
	for len(patterns) < 360 {
		patterns = append(patterns, rgPattern(rnd))
	}
	for _, p := range patterns[27:] {
		// The same with word boundaries around and inside.
		if len(patterns) < 500 {
			patterns = append(patterns, `\b`+p, p+`\b`, `\B`+p)
		}
	}
	pieces := []string{"", " ", "\t", "\r", "a", "b", "c", "x", "K", "k", "\u212A", "ſ", "s", "S", "é", "É", "日本",
		"\xff", "\xe2\x84", "1", "12", "1234", "123456", "foo", "bar", "baz", "err != nil {", "return", "_", "(", "ABC",
		"kelvin", "STRASSE", "straße", ".", "!?", "[x]", "$", "^"}
	var lines []string
	for range 300 {
		var b strings.Builder
		for n := rnd.Intn(8); n > 0; n-- {
			b.WriteString(pieces[rnd.Intn(len(pieces))])
		}
		lines = append(lines, b.String())
	}
	lines = append(lines, "", " ", "\t \t", "\r", "1234567", "  123456  ")
	checked := 0
	for pi, p := range patterns {
		m, err := Compile(Query{Pattern: p})
		if err != nil {
			continue
		}
		if m.dfa == nil {
			continue
		}
		checked++
		// 2: the cache is dropped at almost every step; 140: after the
		// idle state's row was filled (prepareSkip).
		for _, limit := range []int{maxDFAStates, 2, 140} {
			if limit != maxDFAStates && pi%4 != 0 {
				continue // a small cache is slow: a quarter of the patterns
			}
			d := m.dfa.newLineDFA()
			d.maxStates, d.maxResets = limit, 1<<30
			var want []string
			for _, l := range lines {
				got, ok := d.matchLine([]byte(l))
				exp := m.re.Match([]byte(l))
				if got != exp || !ok {
					t.Fatalf("%q on line %q: automaton %v, regexp %v", p, l, got, exp)
				}
				if exp {
					want = append(want, l)
				}
			}
			text := strings.Join(lines, "\n")
			for _, final := range []string{"", "\n"} {
				content := []byte(text + final)
				var have []string
				d.scan(content, func(ls, le int) bool {
					have = append(have, string(content[ls:le]))
					return true
				})
				if strings.Join(have, "\n") != strings.Join(want, "\n") || len(have) != len(want) {
					t.Fatalf("%q: scan found %d lines, matchLine %d (cache of %d states)\nscan: %q\nwant: %q", p, len(have), len(want), limit, have, want)
				}
			}
		}
	}
	if checked < 400 {
		t.Fatalf("only %d of %d patterns ran on the automaton", checked, len(patterns))
	}
	// Assertions it cannot decide leave the regexp in charge.
	for _, p := range []string{`\Afoo`, `foo\z`, `\A`} {
		m, err := Compile(Query{Pattern: p})
		if err != nil {
			t.Fatal(err)
		}
		if m.dfa != nil {
			t.Errorf("%q: has an automaton, but \\A and \\z are not handled", p)
		}
	}
	// An automaton that keeps outgrowing its cache gives up, and the
	// search finds the same lines with the regexp.
	rnd = rand.New(rand.NewSource(1))
	var ab []byte
	for i := 0; i < 1<<20; i++ {
		ab = append(ab, "ab"[rnd.Intn(2)])
		if i%200 == 199 {
			ab = append(ab, '\n')
		}
	}
	ab = append(ab, "\nabbbbbbbbbbbbc\n"...)
	m, err := Compile(Query{Pattern: `a[ab]{12}c`})
	if err != nil {
		t.Fatal(err)
	}
	d := m.dfa.newLineDFA()
	if d.scan(ab, func(ls, le int) bool { return true }) || !d.failed {
		t.Errorf("the automaton of a[ab]{12}c did not give up on random a/b lines (%d resets)", d.resets)
	}
	res, err := m.Search(context.Background(), Request{Files: []File{{Name: "ab"}}, Buffers: map[string]string{"ab": string(ab)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matches != 1 || res.Files[0].Lines[0].Text != "abbbbbbbbbbbbc" {
		t.Errorf("after the automaton gave up: %d matches %+v, want the last line", res.Matches, res.Files)
	}

	// Stop early when add says so.
	m, _ = Compile(Query{Pattern: `^\d+$`})
	n := 0
	m.dfa.newLineDFA().scan(bytes.Repeat([]byte("12\n"), 10), func(ls, le int) bool { n++; return n < 3 })
	if n != 3 {
		t.Errorf("scan went on after add returned false: %d calls", n)
	}
}
