package grep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The differential test runs ripgrep and this package over the same
// generated corpus with a few hundred generated patterns and requires the
// same matching lines (file and line number) from both.
//
// ripgrep runs as
//
//	rg --no-config -n --no-heading --with-filename -uuu --encoding none [-F] [-i] -e PATTERN
//
// in the corpus folder: --no-config so no user rc changes the flavour;
// -uuu so no ignore file or hidden-file rule hides a file (grep searches
// exactly the files it is given); --encoding none because grep reads bytes
// and rg would otherwise decode a file that starts with a UTF-16 byte order
// mark (the corpus has files starting with "\xff\xfe"); the corpus holds no
// NUL byte, so binary detection plays no part. Line numbering is the same: a final newline ends
// the last line, an empty file has no line, "\r" stays part of a line ($
// does not match before "\r\n" in either).
//
// Known flavour differences between Go's RE2 and rg's regex crate, kept out
// of the comparison on purpose:
//   - Perl classes: \w, \d, \s and \b are ASCII in RE2 and Unicode in rg.
//     The generator uses \d and \s only, and the corpus holds no non-ASCII
//     digit or space; \w and \b are not generated.
//   - Invalid UTF-8: RE2 reads each invalid byte as U+FFFD, so "." and a
//     negated class (\S, \D and \W too) match it; rg's never do. Lines
//     holding invalid UTF-8 are left out of the comparison for patterns
//     with "." or a negated class.
//   - Syntax only one side has (\z vs \z, \C, \Q..\E, look-around,
//     backreferences, rg's (?x) details) is not generated.
//
// Case folding is the same on both sides (Unicode simple folding: k, K and
// U+212A KELVIN SIGN; s, S and U+017F LONG S; no Turkish rules, so İ and ı
// fold to nothing ASCII), and the corpus holds all of them.

// rgVocab is what corpus lines are made of.
var rgVocab = []string{
	"Kelvin", "kelvin", "KELVIN", "\u212Aelvin", "\u212A", "string", "STRING", "ſtring", "ſ", "Straße", "STRASSE",
	"İstanbul", "istanbul", "ıi", "Iİ", "café", "CAFÉ", "naïve", "日本語", "Éclair", "éclair",
	"foo_bar", "FooBar", "x=1", "a.b", "a+b", "(paren)", "[bracket]", "{brace}", "$dollar", "^caret",
	"12", "345", "0x1F", "func", "Reader", "reader", "io.Reader", "ErrUnexpectedEOF", "errunexpectedeof",
	"the", "quick", "brown", "fox", "k", "s", "K", "S", "i", "I", "-dash", "tab\there", "back\\slash",
}

// rgCorpus writes the generated corpus into dir and returns its file names.
func rgCorpus(t *testing.T, dir string, rnd *rand.Rand) []string {
	t.Helper()
	files := map[string][]byte{
		"empty.txt":       nil,
		"only-newline":    []byte("\n"),
		"only-crlf":       []byte("\r\n"),
		"blank-lines.txt": []byte("\n\n  \n\t\n"),
		"no-final-nl.txt": []byte("last line has no newline Kelvin"),
		"fold.txt":        []byte("\u212Aelvin scale\nſtring theory\nKELVIN\nstrinG\nİstanbul\nıi\n"),
		"invalid.txt":     []byte("a\xffb\nkel\xc3vin\n\xe2\x84 broken kelvin\nvalid line\n\xff\n"),
	}
	for i := 0; i < 40; i++ {
		var b bytes.Buffer
		eol := "\n"
		if i%4 == 1 {
			eol = "\r\n"
		}
		for l := rnd.Intn(30); l > 0; l-- {
			switch rnd.Intn(12) {
			case 0:
				// an empty line
			case 1:
				b.WriteString(strings.Repeat(" ", rnd.Intn(4)) + "\t")
			case 2:
				b.WriteString("\xff\xfe " + rgVocab[rnd.Intn(len(rgVocab))])
			default:
				for w := 1 + rnd.Intn(6); w > 0; w-- {
					if b.Len() > 0 && rnd.Intn(3) > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(rgVocab[rnd.Intn(len(rgVocab))])
				}
			}
			b.WriteString(eol)
		}
		if i%5 == 2 && b.Len() > 0 {
			b.Truncate(b.Len() - len(eol)) // no final newline
		}
		files[fmt.Sprintf("d%d/f%02d.txt", i%3, i)] = b.Bytes()
	}
	var names []string
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// rgPattern makes one random pattern from literals, classes, anchors,
// repetitions, alternations and (?i).
func rgPattern(rnd *rand.Rand) string {
	atom := func() string {
		switch rnd.Intn(10) {
		case 0:
			return []string{`[a-z]`, `[A-Z0-9]`, `[kK]`, `[sſ]`, `\d`, `\s`, `[^a-z]`, `[[:alpha:]]`, `[éÉ]`, `.`}[rnd.Intn(10)]
		case 1:
			return "(" + rgLiteral(rnd) + "|" + rgLiteral(rnd) + ")"
		default:
			return rgLiteral(rnd)
		}
	}
	var b strings.Builder
	if rnd.Intn(4) == 0 {
		b.WriteString("(?i)")
	}
	if rnd.Intn(6) == 0 {
		b.WriteString("^")
	}
	for n := 1 + rnd.Intn(3); n > 0; n-- {
		b.WriteString(atom())
		if rnd.Intn(4) == 0 {
			b.WriteString([]string{"+", "*", "?", "{1,2}"}[rnd.Intn(4)])
		}
	}
	if rnd.Intn(6) == 0 {
		b.WriteString("$")
	}
	return b.String()
}

// rgLiteral is a quoted piece of a vocabulary word.
func rgLiteral(rnd *rand.Rand) string {
	w := []rune(rgVocab[rnd.Intn(len(rgVocab))])
	i := rnd.Intn(len(w))
	j := i + 1 + rnd.Intn(len(w)-i)
	return regexp.QuoteMeta(string(w[i:j]))
}

// rgMatches runs rg in dir and returns "name:line" for every matching line.
func rgMatches(t *testing.T, rg, dir string, q Query) []string {
	t.Helper()
	args := []string{"--no-config", "-n", "--no-heading", "--with-filename", "-uuu", "--encoding", "none", "-j1"}
	if q.Literal {
		args = append(args, "-F")
	}
	if q.IgnoreCase {
		args = append(args, "-i")
	}
	args = append(args, "-e", q.Pattern)
	cmd := exec.Command(rg, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("rg %q: %v: %s", args, err, stderr.String())
	}
	var res []string
	for _, line := range bytes.Split(out, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		name, rest, ok1 := bytes.Cut(line, []byte{':'})
		num, _, ok2 := bytes.Cut(rest, []byte{':'})
		if !ok1 || !ok2 {
			t.Fatalf("rg output line %q", line)
		}
		n, err := strconv.Atoi(string(num))
		if err != nil {
			t.Fatalf("rg output line %q: %v", line, err)
		}
		res = append(res, fmt.Sprintf("%s:%d", strings.TrimPrefix(string(name), "./"), n))
	}
	slices.Sort(res)
	return res
}

// TestSearchAgreesWithRipgrep: for every generated pattern, grep (cold and
// with a warm filter) reports exactly the lines rg reports.
func TestSearchAgreesWithRipgrep(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("rg (ripgrep) is not installed: scripts/setup installs it, and CI must run this test")
		}
		t.Skip("rg (ripgrep) is not installed; make install installs it")
	}
	dir := t.TempDir()
	rnd := rand.New(rand.NewSource(16))
	names := rgCorpus(t, dir, rnd)
	root := openRoot(t, dir)
	files := make([]File, len(names))
	invalid := map[string]bool{} // "name:line" of lines holding invalid UTF-8
	for i, name := range names {
		files[i] = File{Name: name, Root: root, Rel: name}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for n, l := range splitLines(string(data)) {
			if !utf8.ValidString(l) {
				invalid[fmt.Sprintf("%s:%d", name, n+1)] = true
			}
		}
	}
	idx := NewIndex(0)
	t.Cleanup(func() { idx.Close() })
	if err := idx.Build(context.Background(), files); err != nil {
		t.Fatal(err)
	}

	queries := []Query{
		{Pattern: `^\s*$`}, {Pattern: `^$`}, {Pattern: `x*`}, {Pattern: `(?i)kelvin`}, {Pattern: `kelvin`, IgnoreCase: true},
		{Pattern: `kelvin`, Literal: true, IgnoreCase: true}, {Pattern: `string`, IgnoreCase: true},
		{Pattern: `string`, Literal: true, IgnoreCase: true}, {Pattern: `(?i)istanbul`}, {Pattern: `(?i)ı`},
		{Pattern: `(?i)straße`}, {Pattern: `a.b`, Literal: true}, {Pattern: `\r$`}, {Pattern: `line$`},
		{Pattern: `(?i)K`}, {Pattern: `(?i)s`}, {Pattern: `(?i)[k]elvin|ſ`}, {Pattern: `-dash`, Literal: true},
		// Case-insensitive literals and regexes with short or no required
		// text: the classes the line automaton (dfa.go) decides.
		{Pattern: `FooBar`, Literal: true, IgnoreCase: true}, {Pattern: `ERRUNEXPECTEDEOF`, Literal: true, IgnoreCase: true},
		{Pattern: `(?i)io\.reader`}, {Pattern: `(?i)foo_bar|fox`}, {Pattern: `\d{4}`}, {Pattern: `\d{2}`}, {Pattern: `^\d+$`},
		{Pattern: `^[ \t]+$`}, {Pattern: `^\s*\d{2,}\s*$`}, {Pattern: `[A-Z]{3,}`}, {Pattern: `\s+$`}, {Pattern: `^\S+$`},
		{Pattern: `x=\d\s*`}, {Pattern: `[a-z]+_[a-z]+`}, {Pattern: `\(\w+\)`}, {Pattern: `^\s*\$`}, {Pattern: `[^ -~]`},
		{Pattern: `.{40,}`}, {Pattern: `^.{0,3}$`}, {Pattern: `(?i)^[a-z]+$`}, {Pattern: `\d\s*$`}, {Pattern: `[éÉ].`},
	}
	for len(queries) < 320 {
		q := Query{Pattern: rgPattern(rnd)}
		switch rnd.Intn(8) {
		case 0:
			q = Query{Pattern: rgVocab[rnd.Intn(len(rgVocab))], Literal: true, IgnoreCase: rnd.Intn(2) == 0}
		case 1:
			q.IgnoreCase = true
		}
		queries = append(queries, q)
	}

	diffs := 0
	for _, q := range queries {
		m, err := Compile(q)
		if err != nil {
			t.Errorf("Compile(%+v): %v", q, err)
			continue
		}
		rgLines := rgMatches(t, rg, dir, q)
		flavour := !q.Literal && (strings.Contains(q.Pattern, ".") || strings.Contains(q.Pattern, "[^") ||
			strings.Contains(q.Pattern, `\S`) || strings.Contains(q.Pattern, `\D`) || strings.Contains(q.Pattern, `\W`))
		keep := func(lines []string) []string {
			if !flavour {
				return lines
			}
			return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return invalid[l] })
		}
		want := keep(rgLines)
		for _, ix := range []*Index{nil, idx} {
			res, err := m.Search(context.Background(), Request{Files: files, MaxPerFile: 1 << 20, MaxTotal: 1 << 20, Index: ix})
			if err != nil {
				t.Fatal(err)
			}
			var have []string
			for _, f := range res.Files {
				for _, l := range f.Lines {
					if l.Match {
						have = append(have, fmt.Sprintf("%s:%d", f.Name, l.Num))
					}
				}
			}
			slices.Sort(have)
			if have = keep(have); !slices.Equal(have, want) {
				diffs++
				t.Errorf("%+v (warm filter %v): grep and rg differ\nonly grep: %v\nonly rg:   %v", q, ix != nil, minus(have, want), minus(want, have))
			}
		}
	}
	t.Logf("%d queries over %d files: %d differences from rg", len(queries), len(files), diffs)
}

// minus lists the elements of a not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
