package grep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var corpus = map[string]string{
	"a.go":       "package a\n\nfunc NewReader(r io.Reader) *Reader {\n\treturn &Reader{r: r}\n}\n// ErrUnexpectedEOF is bad\nvar x = io.ErrUnexpectedEOF\n",
	"b/b.go":     "package b\r\nconst Kelvin = 273\r\nfunc readerOf() {}\r\n\r\n  \t\r\nerrunexpectedeof := 1\r\n",
	"b/c/c.txt":  "Straße\nSTRASSE\nfoo_12z bar\nx=1\n\nlast line without newline",
	"bin.dat":    "abc\x00ErrUnexpectedEOF\n",
	"empty.txt":  "",
	"fold.txt":   "\u212Aelvin scale\nſtring theory\nKELVIN\nstrinG\n",
	"unicode.md": "Éclair éclair ÉCLAIR\nnaïve café\n日本語 text\n",
}

func writeCorpus(t testing.TB) []File {
	t.Helper()
	dir := t.TempDir()
	var files []File
	for name, text := range corpus {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := openRoot(t, dir)
	for _, name := range sortedKeys(corpus) {
		files = append(files, File{Name: name, Root: root, Rel: name})
	}
	return files
}

func openRoot(t testing.TB, dir string) *Root {
	t.Helper()
	root, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// diskPath is where f lives, for the reference readers of the tests.
func diskPath(f File) string { return filepath.Join(f.Root.Dir(), filepath.FromSlash(f.Rel)) }

func sortedKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// naive is the reference: every line of every text file, one regexp call.
func naive(t testing.TB, q Query, files []File) []string {
	expr := q.Pattern
	if q.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	if q.IgnoreCase {
		expr = "(?i)" + expr
	}
	re := regexp.MustCompile(expr)
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(diskPath(f))
		if err != nil {
			t.Fatal(err)
		}
		if isBinary(data) {
			continue
		}
		for i, l := range splitLines(string(data)) {
			if re.MatchString(l) {
				out = append(out, fmt.Sprintf("%s:%d", f.Name, i+1))
			}
		}
	}
	return out
}

// splitLines splits text into its lines: none for empty text, and no
// empty line after a final newline.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

func got(t testing.TB, q Query, files []File, idx *Index) []string {
	m, err := Compile(q)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", q, err)
	}
	res, err := m.Search(context.Background(), Request{Files: files, MaxPerFile: 1000, MaxTotal: 100000, Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range res.Files {
		for _, l := range f.Lines {
			if l.Match {
				out = append(out, fmt.Sprintf("%s:%d", f.Name, l.Num))
			}
		}
	}
	return out
}

var queries = []Query{
	{Pattern: "ErrUnexpectedEOF"},
	{Pattern: "ErrUnexpectedEOF", Literal: true},
	{Pattern: "errunexpectedeof", IgnoreCase: true},
	{Pattern: "errunexpectedeof", Literal: true, IgnoreCase: true},
	{Pattern: `func \w+Reader\(`},
	{Pattern: `(?i)reader`},
	{Pattern: `Reader|readerOf`},
	{Pattern: `[Rr]eader`},
	{Pattern: `\w+_\d+z`},
	{Pattern: `^\s*$`},
	{Pattern: `^x=1$`},
	{Pattern: `line$`},
	{Pattern: `éclair`, IgnoreCase: true},
	{Pattern: `ÉCLAIR`, Literal: true, IgnoreCase: true},
	{Pattern: `straße`, IgnoreCase: true},
	{Pattern: `a.b`},
	{Pattern: `[^a]ble`},
	{Pattern: `\bbad\b`},
	{Pattern: `日本`},
	{Pattern: `(foo|bar)_?\d*`},
	{Pattern: `x*`},
	{Pattern: `io\.(Reader|ErrUnexpectedEOF)`},
	{Pattern: `(?i)kelvin`},
	{Pattern: `(?i)kelvin scale`},
	{Pattern: "kelvin", Literal: true, IgnoreCase: true},
	{Pattern: "string", IgnoreCase: true},
	{Pattern: "string", Literal: true, IgnoreCase: true},
	{Pattern: `(?i)(kel|str)`},
	{Pattern: `(?i)[k]elvin|theory`},
}

// TestSearchMatchesNaive: the prefiltered, parallel search finds exactly
// the lines a plain line-by-line regexp finds, cold and with a warm index.
func TestSearchMatchesNaive(t *testing.T) {
	files := writeCorpus(t)
	idx := NewIndex(0)
	if err := idx.Build(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		want := naive(t, q, files)
		for _, ix := range []*Index{nil, idx} {
			if g := got(t, q, files, ix); strings.Join(g, " ") != strings.Join(want, " ") {
				t.Errorf("search %+v (index %v) = %v; want %v", q, ix != nil, g, want)
			}
		}
	}
}

func TestLiteralExtraction(t *testing.T) {
	tests := []struct {
		q          Query
		lits       string
		fold, pure bool
	}{
		{Query{Pattern: "ErrUnexpectedEOF"}, "ErrUnexpectedEOF", false, true},
		{Query{Pattern: "a.b", Literal: true}, "a.b", false, true},
		{Query{Pattern: "Foo", IgnoreCase: true}, "foo", true, true},
		{Query{Pattern: `func \w+Reader\(`}, "Reader(", false, false},
		{Query{Pattern: `foo|barbaz`}, "foo barbaz", false, false},
		{Query{Pattern: `[Tt]est_x`}, "test_x", true, false},        // the parser folds [Tt]
		{Query{Pattern: `(?i)hello\s+world`}, "world", true, false}, // rarer anchor
		{Query{Pattern: `\w+_\d+z`}, "z", false, false},
		{Query{Pattern: `\d+`}, "", false, false},
	}
	for _, tt := range tests {
		m, err := Compile(tt.q)
		if err != nil {
			t.Fatal(err)
		}
		lits, fold, pure := m.Literals()
		if strings.Join(lits, " ") != tt.lits || fold != tt.fold || pure != tt.pure {
			t.Errorf("Compile(%+v).Literals() = %q, %v, %v; want %q, %v, %v", tt.q, lits, fold, pure, tt.lits, tt.fold, tt.pure)
		}
	}
}

func TestBadPatterns(t *testing.T) {
	for _, q := range []Query{{Pattern: ""}, {Pattern: "a("}, {Pattern: `a\nb`}, {Pattern: "x\ny", Literal: true}, {Pattern: `[\n]`}} {
		if _, err := Compile(q); err == nil {
			t.Errorf("Compile(%+v) succeeded; want an error", q)
		}
	}
}

func TestContextAndCaps(t *testing.T) {
	dir := t.TempDir()
	var sb strings.Builder
	for i := 1; i <= 50; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&sb, "hit %d\n", i)
		} else {
			fmt.Fprintf(&sb, "line %d\n", i)
		}
	}
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte(sb.String()), 0o644)
	files := []File{{Name: "f.txt", Root: openRoot(t, dir), Rel: "f.txt"}, {Name: "g.txt"}}
	m, _ := Compile(Query{Pattern: "hit", Literal: true})
	res, err := m.Search(context.Background(), Request{Files: files, Buffers: map[string]string{"g.txt": "hit buffer\n"}, Context: 1, MaxPerFile: 3, MaxTotal: 100})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range res.Files[0].Lines {
		lines = append(lines, fmt.Sprintf("%d%v", l.Num, l.Match))
	}
	want := "9false 10true 11false 19false 20true 21false 29false 30true 31false"
	if strings.Join(lines, " ") != want || !res.Files[0].More || !res.Truncated {
		t.Errorf("lines = %v (more %v); want %s and more", lines, res.Files[0].More, want)
	}
	if len(res.Files) != 2 || res.Files[1].Lines[0].Text != "hit buffer" {
		t.Errorf("buffer file not searched: %+v", res.Files)
	}
	res, _ = m.Search(context.Background(), Request{Files: files, MaxTotal: 2})
	if res.Matches != 2 || !res.Truncated || len(res.Files) != 1 {
		t.Errorf("total cap: %d matches, truncated %v, %d files; want 2, true, 1", res.Matches, res.Truncated, len(res.Files))
	}
}

// TestIndexNeverStale: a warm index must notice a changed file.
func TestIndexNeverStale(t *testing.T) {
	files := writeCorpus(t)
	idx := NewIndex(0)
	if err := idx.Build(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	q := Query{Pattern: "zebra_unique", Literal: true}
	if g := got(t, q, files, idx); len(g) != 0 {
		t.Fatalf("before the change: %v", g)
	}
	p := diskPath(files[0])
	os.WriteFile(p, []byte("a zebra_unique here\n"), 0o644)
	later := time.Now().Add(time.Second)
	os.Chtimes(p, later, later)
	if g := got(t, q, files, idx); len(g) != 1 {
		t.Fatalf("after the change: %v; want one match", g)
	}
}

func FuzzMatcherMatchesNaive(f *testing.F) {
	for _, q := range queries {
		f.Add(q.Pattern, q.Literal, q.IgnoreCase, "Reader ErrUnexpectedEOF\nfoo_1z\n\n")
	}
	f.Fuzz(func(t *testing.T, pattern string, literal, fold bool, text string) {
		if !utf8.ValidString(pattern) {
			return // the reference regexp cannot express it
		}
		q := Query{Pattern: pattern, Literal: literal, IgnoreCase: fold}
		m, err := Compile(q)
		if err != nil {
			return
		}
		expr := pattern
		if literal {
			expr = regexp.QuoteMeta(expr)
		}
		if fold {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			t.Fatalf("Compile accepted %q but regexp rejects it: %v", expr, err)
		}
		if strings.ContainsAny(expr, ".\\[") {
			return // "." and classes do not match newlines here; regexp's may
		}
		res, err := m.Search(context.Background(), Request{Files: []File{{Name: "x"}}, Buffers: map[string]string{"x": text}, MaxPerFile: 1 << 20, MaxTotal: 1 << 20, MaxLineLen: 1 << 20})
		if err != nil || isBinary([]byte(text)) {
			return
		}
		var want, have []int
		for i, l := range splitLines(text) {
			if re.MatchString(l) {
				want = append(want, i+1)
			}
		}
		for _, fr := range res.Files {
			for _, l := range fr.Lines {
				have = append(have, l.Num)
			}
		}
		if fmt.Sprint(want) != fmt.Sprint(have) {
			t.Fatalf("pattern %q on %q: lines %v; want %v", expr, text, have, want)
		}
	})
}

// FuzzFilterKeepsEveryFileThatHoldsTheLiteral: whatever a file holds, the
// bit set the index computes for it lets through every literal cut from
// it, in any ASCII case: the filter may read a file in vain, never skip
// one that matches.
func FuzzFilterKeepsEveryFileThatHoldsTheLiteral(f *testing.F) {
	f.Add([]byte("func NewReader(r io.Reader) *Reader {"), uint16(5), uint8(7), true)
	f.Add([]byte("h1:9Yx8bQ2ZbE3k+Ow7n0Zr4Xkq=\r\n\x00\xff"), uint16(3), uint8(9), false)
	f.Fuzz(func(t *testing.T, content []byte, start uint16, n uint8, fold bool) {
		if len(content) < 3 {
			return
		}
		i := int(start) % len(content)
		j := min(len(content), i+3+int(n)%64)
		lit := string(content[i:j])
		if len(lit) < 3 || strings.ContainsAny(lit, "\r\n") || (fold && !asciiFold(lit)) {
			return
		}
		if fold {
			b := []byte(lit)
			for k, c := range b {
				b[k] = upper(c)
			}
			lit = string(b) // the file holds it in another ASCII case
		}
		m, err := Compile(Query{Pattern: lit, Literal: true, IgnoreCase: fold})
		if err != nil {
			t.Fatal(err)
		}
		var scratch, out []uint64
		if bits := trigramBits(content, &scratch, &out); !m.mayMatch(bits) {
			t.Fatalf("the filter rules out %q (ignore case %v) in a file that holds it", lit, fold)
		}
	})
}

// TestSearchesAnchorOnTheRarestByteOfCode: the byte a literal search
// looks for first is the literal's rarest in source code, as the corpus
// measured it: a capital of a camel-case name, not its lower-case letters;
// under ignore case, a letter rare in both its cases.
func TestSearchesAnchorOnTheRarestByteOfCode(t *testing.T) {
	for _, tc := range []struct {
		lit  string
		fold bool
		want string // the bytes it may anchor on
	}{
		{"err != nil {", false, "!"},
		{"hashMightPanic", false, "MP"},
		{"ErrUnexpectedEOF", false, "UOFE"},
		{"maxbacktrack", true, "kx"},
		{"workdoneprogress", true, "kwgp"},
	} {
		if r := rarest(tc.lit, tc.fold); !strings.ContainsRune(tc.want, rune(tc.lit[r])) {
			t.Errorf("rarest(%q, fold %v) is %q, want one of %q", tc.lit, tc.fold, tc.lit[r], tc.want)
		}
	}
	// A regular expression whose required bytes are single characters is
	// prefiltered on the rarest: "_" is rarer than "(" in code ("(" in
	// every call made this search 1.5x rg's time).
	m, err := Compile(Query{Pattern: `\w+_\d{3}\(`})
	if err != nil {
		t.Fatal(err)
	}
	if lits, _, _ := m.Literals(); !slices.Equal(lits, []string{"_"}) || m.whole {
		t.Errorf(`\w+_\d{3}\( is prefiltered on %q (whole files with the automaton: %v), want "_" and only the lines that hold it`, lits, m.whole)
	}
	// A byte among the most common is not worth finding first: the
	// automaton reads whole files.
	if m, err := Compile(Query{Pattern: `^[ \t]+$`}); err != nil || !m.whole {
		t.Errorf(`^[ \t]+$: whole files %v (%v), want the automaton over whole files`, m != nil && m.whole, err)
	}
}

// TestIndexRare: anchoring on a literal's rarest byte finds what
// bytes.Index finds, at the edges of the text too.
func TestIndexRare(t *testing.T) {
	needle := []byte("err != nil {")
	r := rarest(string(needle), false)
	for _, hay := range []string{
		"", "err != nil {", "x err != nil {", "err != nil", "!err != nil {", "a != b; err != nil {}",
		"err != nil", "!!!!", "rr != nil {", "err != nil {err != nil {", "\n!= err != nil {\n",
	} {
		if got, want := indexRare([]byte(hay), needle, r), bytes.Index([]byte(hay), needle); got != want {
			t.Errorf("indexRare(%q) = %d, bytes.Index = %d", hay, got, want)
		}
	}
}
