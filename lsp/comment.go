package lsp

import (
	"path/filepath"
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// Instruction comments: a whole-line comment whose text starts with
// "agent:" ("// agent: make Total skip negative quantities", "# agent:",
// "-- agent:", ";; agent:") is an instruction for the agent, for editors
// that have no agentls plugin: the code action "Run agent on this comment"
// (TitleRunComment) runs it as an edit task. The comment continues on the
// following comment lines of the same style, up to an empty comment line,
// a line of code or another "agent:" comment.

// instruction is one instruction comment found in a document.
type instruction struct {
	// StartLine and EndLine are the 0-based lines the comment spans
	// (inclusive).
	StartLine, EndLine int
	// Text is the instruction: the comment's text after "agent:", its
	// lines joined, every run of white space one space.
	Text string
	// Lines are the comment's lines as the document holds them (without
	// line endings), to tell whether the comment is still there, untouched.
	Lines []string
}

// commentStyles maps an LSP languageId to the line-comment markers of the
// language. A language not listed (or no languageId) accepts every marker
// of commonMarkers: "agent:" right after a comment marker is specific
// enough not to match code.
var commentStyles = func() map[string][]string {
	m := map[string][]string{}
	add := func(markers []string, ids string) {
		for _, id := range strings.Fields(ids) {
			m[id] = markers
		}
	}
	add([]string{"//"}, `go c cpp objective-c objective-cpp java javascript javascriptreact typescript
		typescriptreact rust csharp swift kotlin scala dart zig jsonc groovy proto d fsharp cuda glsl hlsl`)
	add([]string{"//", "#"}, "php")
	add([]string{"#"}, `python shellscript sh bash zsh fish ruby perl r yaml toml dockerfile makefile
		cmake elixir nim powershell julia coffeescript terraform hcl nix conf ini`)
	add([]string{"--"}, "lua sql haskell ada elm purescript plsql")
	add([]string{";"}, "lisp commonlisp clojure scheme emacs-lisp elisp racket fennel")
	add([]string{"%"}, "erlang tex latex matlab prolog")
	add([]string{`"`}, "vim")
	return m
}()

// commonMarkers are the markers tried for a language commentStyles does
// not list.
var commonMarkers = []string{"//", "#", "--", ";", "%"}

// extLanguages names the language of a file by its extension, for clients
// that send no languageId or one commentStyles does not know.
var extLanguages = map[string]string{
	".go": "go", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java",
	".js": "javascript", ".mjs": "javascript", ".jsx": "javascriptreact", ".ts": "typescript",
	".tsx": "typescriptreact", ".rs": "rust", ".cs": "csharp", ".swift": "swift", ".kt": "kotlin",
	".py": "python", ".sh": "shellscript", ".bash": "shellscript", ".rb": "ruby", ".pl": "perl",
	".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".lua": "lua", ".sql": "sql", ".hs": "haskell",
	".lisp": "lisp", ".el": "emacs-lisp", ".clj": "clojure", ".scm": "scheme", ".erl": "erlang",
	".php": "php", ".vim": "vim", ".zig": "zig", ".dart": "dart", ".scala": "scala",
}

// markersFor is the line-comment markers of a document.
func markersFor(languageID, filename string) []string {
	if m, ok := commentStyles[strings.ToLower(languageID)]; ok {
		return m
	}
	if id, ok := extLanguages[strings.ToLower(filepath.Ext(filename))]; ok {
		return commentStyles[id]
	}
	return commonMarkers
}

// agentTag is "agent:" at the start of a comment's text (any case).
var agentTag = lazyregexp.New(`(?i)^agent:\s*`)

// commentText is the text of line after its comment marker (and the
// marker's repetitions: ";;", "///", "##"), and the marker, when the line
// is a whole-line comment with one of markers.
func commentText(line string, markers []string) (text, marker string, ok bool) {
	s := strings.TrimLeft(strings.TrimRight(line, "\r"), " \t")
	for _, m := range markers {
		if !strings.HasPrefix(s, m) {
			continue
		}
		rest := s
		for strings.HasPrefix(rest, m) {
			rest = rest[len(m):]
		}
		return strings.TrimSpace(rest), m, true
	}
	return "", "", false
}

// instructions finds the instruction comments of a document's text.
func instructions(text string, markers []string) []instruction {
	lines := strings.Split(text, "\n")
	var out []instruction
	for i := 0; i < len(lines); i++ {
		body, marker, ok := commentText(lines[i], markers)
		if !ok {
			continue
		}
		loc := agentTag.FindStringIndex(body)
		if loc == nil {
			continue
		}
		in := instruction{StartLine: i, EndLine: i, Lines: []string{strings.TrimRight(lines[i], "\r")}}
		parts := []string{body[loc[1]:]}
		for j := i + 1; j < len(lines); j++ {
			next, m, ok := commentText(lines[j], []string{marker})
			if !ok || m != marker || next == "" || agentTag.MatchString(next) {
				break
			}
			parts = append(parts, next)
			in.EndLine = j
			in.Lines = append(in.Lines, strings.TrimRight(lines[j], "\r"))
		}
		in.Text = strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
		i = in.EndLine
		if in.Text == "" {
			continue // "// agent:" and nothing to do
		}
		out = append(out, in)
	}
	return out
}

// instructionAt is the instruction comment that spans line, if any.
//
// It is asked on every code action and hover request, so it reads only
// the run of comment lines around line, not the whole document: an
// instruction is such a run's lines from an "agent:" line on (the lines
// before it and the code around cannot change it), so instructions over
// that run alone finds the same one.
func instructionAt(text string, markers []string, line int) (instruction, bool) {
	start := lineStart(text, line)
	if start < 0 {
		return instruction{}, false
	}
	isComment := func(off int) bool {
		_, _, ok := commentText(lineFrom(text, off), markers)
		return ok
	}
	// Up to the first line of the run of comment lines holding line.
	first, from := line, start
	if !isComment(from) {
		return instruction{}, false
	}
	for first > 0 {
		prev := strings.LastIndexByte(text[:from-1], '\n') + 1
		if !isComment(prev) {
			break
		}
		first, from = first-1, prev
	}
	// Down to the run's last line.
	end := start + len(lineFrom(text, start))
	for end < len(text) && isComment(end+1) {
		end += 1 + len(lineFrom(text, end+1))
	}
	for _, in := range instructions(text[from:end], markers) {
		in.StartLine += first
		in.EndLine += first
		if line >= in.StartLine && line <= in.EndLine {
			return in, true
		}
	}
	return instruction{}, false
}

// lineStart is the offset of 0-based line n of text, or -1 when text has
// fewer lines (the empty "line" after a final newline counts, as
// strings.Split counts it).
func lineStart(text string, n int) int {
	off := 0
	for ; n > 0; n-- {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off
}

// lineFrom is the line of text that starts at offset off, without its
// line break.
func lineFrom(text string, off int) string {
	if i := strings.IndexByte(text[off:], '\n'); i >= 0 {
		return text[off : off+i]
	}
	return text[off:]
}

// findInstruction finds the instruction comment with the given text, the
// one nearest to line when several match.
func findInstruction(text string, markers []string, want string, line int) (instruction, bool) {
	var best instruction
	found := false
	for _, in := range instructions(text, markers) {
		if in.Text != want {
			continue
		}
		if !found || absInt(in.StartLine-line) < absInt(best.StartLine-line) {
			best, found = in, true
		}
	}
	return best, found
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
