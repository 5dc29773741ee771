package completion

import (
	"path/filepath"
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// Prompt is what one completion sends: the text before and after the
// cursor (within the budget), a header of what else the model should know
// (the file's name, its imports when the window lost them, signatures of
// the symbols near the cursor), and whether the answer may span lines.
type Prompt struct {
	Header    string // comment lines, in the file's language
	Prefix    string // text before the cursor (ends at the cursor)
	Suffix    string // text after the cursor
	MultiLine bool
	// RestOfLine is the text after the cursor on its line (trailing space
	// removed); NextLine the next non-blank line after the cursor's.
	RestOfLine, NextLine string
}

// Bytes is the size of the prompt's text.
func (p Prompt) Bytes() int { return len(p.Header) + len(p.Prefix) + len(p.Suffix) }

// multiLine reports whether a completion at the cursor may span lines: the
// cursor's line is empty (blank up to the cursor and after it) and the
// last non-blank line before it opens a block, or the text before the
// cursor on its line ends by opening one with nothing after it.
func multiLine(prefix, suffix string) bool {
	lineStart := strings.LastIndexByte(prefix, '\n') + 1
	before := prefix[lineStart:]
	after, _, _ := strings.Cut(suffix, "\n")
	if strings.TrimSpace(after) != "" {
		return false
	}
	if t := strings.TrimSpace(before); t != "" {
		// A call or a list opened on the cursor's line goes on on it.
		return !strings.HasSuffix(t, "(") && !strings.HasSuffix(t, "[") && opensBlock(t)
	}
	prev := strings.TrimRight(prefix[:lineStart], " \t\r\n")
	i := strings.LastIndexByte(prev, '\n')
	return opensBlock(strings.TrimSpace(prev[i+1:]))
}

func opensBlock(line string) bool {
	for _, end := range []string{"{", "(", "[", ":", "=>", " do", " then", "->"} {
		if strings.HasSuffix(line, end) {
			return true
		}
	}
	return false
}

// window cuts the prefix to at most n bytes and the suffix to at most m,
// at line boundaries where it can (a cut in the middle of a long line
// keeps its end, for the prefix, or its start, for the suffix).
func window(prefix, suffix string, n, m int) (string, string, bool) {
	cut := false
	if len(prefix) > n {
		cut = true
		p := prefix[len(prefix)-n:]
		if i := strings.IndexByte(p, '\n'); i >= 0 && i < len(p)-1 {
			p = p[i+1:]
		}
		prefix = p
	}
	if len(suffix) > m {
		s := suffix[:m]
		if i := strings.LastIndexByte(s, '\n'); i > 0 {
			s = s[:i+1]
		}
		suffix = s
	}
	return prefix, suffix, cut
}

// importRE matches the lines that bring names into a file in the common
// languages: Go, Python, JavaScript and TypeScript, Rust, Java, Kotlin, C
// and C++, C#, Ruby, PHP.
var importRE = lazyregexp.New(`^\s*(import\b|from\s+\S+\s+import\b|#\s*include\b|use\s+\S|using\s+\S|require\b|(const|let|var)\s+.*=\s*require\(|extern\s+crate\b)`)

// imports returns the import lines of text (Go's import blocks whole),
// from its first lines, at most max bytes.
func imports(text string, max int) string {
	var b strings.Builder
	inBlock := false
	lines := strings.SplitN(text, "\n", 400)
	if len(lines) == 400 {
		lines = lines[:399]
	}
	for _, line := range lines {
		line = strings.TrimRight(line, "\r")
		keep := false
		switch {
		case inBlock:
			keep = true
			if strings.TrimSpace(line) == ")" {
				inBlock = false
			}
		case strings.HasPrefix(line, "import ("):
			keep, inBlock = true, true
		case importRE.MatchString(line):
			keep = true
		}
		if keep {
			if b.Len()+len(line)+1 > max {
				break
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// declRE matches a line declaring a function, method, type or class, with
// the declared name in group "name".
var declRE = lazyregexp.New(`^\s*(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:static\s+)?(?:func|def|fn|function|class|type|interface|struct|enum|trait)\s+(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)`)

var identRE = lazyregexp.New(`[A-Za-z_][A-Za-z0-9_]*`)

// nearIdentifiers are the identifiers of the lines around the cursor (the
// last lines of the prefix, the first of the suffix).
func nearIdentifiers(prefix, suffix string) map[string]bool {
	near := lastLines(prefix, 8) + "\n" + firstLines(suffix, 3)
	out := map[string]bool{}
	for _, id := range identRE.FindAllString(near, -1) {
		if len(id) > 1 && !keywords[id] {
			out[id] = true
		}
	}
	return out
}

func lastLines(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		i = strings.LastIndexByte(s[:i], '\n')
		if i < 0 {
			return s
		}
	}
	return s[i:]
}

func firstLines(s string, n int) string {
	i := 0
	for ; n > 0; n-- {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return s
		}
		i += j + 1
	}
	return s[:i]
}

// keywords are words that name no symbol worth a signature.
var keywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`if else for range return func def fn function class type interface struct enum trait
		var let const import from package use pub async await static self this nil null None true false True False new
		int string bool byte error float64 int64 uint32 void char double any map chan go defer switch case break continue`) {
		keywords[k] = true
	}
}

// signatures returns the declaration lines in text of the names in want
// (each name once, marked found), at most max bytes.
func signatures(text string, want, found map[string]bool, max int) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		m := declRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		if !want[name] || found[name] {
			continue
		}
		sig := strings.TrimSpace(line)
		sig = strings.TrimSuffix(sig, "{")
		sig = strings.TrimSpace(sig)
		if len(sig) > 200 {
			sig = sig[:200]
		}
		if b.Len()+len(sig)+1 > max {
			break
		}
		found[name] = true
		b.WriteString(sig)
		b.WriteByte('\n')
	}
	return b.String()
}

// commentPrefix is the line comment of the file's language.
func commentPrefix(name, languageID string) string {
	switch languageID {
	case "python", "ruby", "shellscript", "sh", "bash", "yaml", "toml", "perl", "r", "elixir", "makefile", "dockerfile":
		return "# "
	case "lua", "sql", "haskell":
		return "-- "
	case "lisp", "emacs-lisp", "clojure", "scheme":
		return ";; "
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".py", ".rb", ".sh", ".bash", ".yaml", ".yml", ".toml", ".pl", ".r", ".ex", ".exs":
		return "# "
	case ".lua", ".sql", ".hs":
		return "-- "
	case ".el", ".lisp", ".clj", ".scm":
		return ";; "
	}
	return "// "
}

// commented prefixes every line of text with the comment c.
func commented(c, text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString(c)
		b.WriteString(line)
	}
	return b.String()
}
