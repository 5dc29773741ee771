package lsp

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestInstructions: which comments are instructions, per language, where
// they end, and what their text is.
func TestInstructions(t *testing.T) {
	tests := []struct {
		name, lang, file, text string
		want                   []instruction // Lines left out: checked by Text and span
	}{
		{"go one line", "go", "a.go", "package a\n\n// agent: make Total skip negative quantities\nfunc Total() {}\n",
			[]instruction{{StartLine: 2, EndLine: 2, Text: "make Total skip negative quantities"}}},
		{"go two lines, then code", "go", "a.go", "\t// agent: make Total skip\n\t// negative quantities\n\tx := 1\n",
			[]instruction{{StartLine: 0, EndLine: 1, Text: "make Total skip negative quantities"}}},
		{"stops at an empty comment line", "go", "a.go", "// AGENT: rename x\n//\n// Total sums.\n",
			[]instruction{{StartLine: 0, EndLine: 0, Text: "rename x"}}},
		{"stops at the next instruction", "go", "a.go", "// agent: one\n// agent: two\n",
			[]instruction{{StartLine: 0, EndLine: 0, Text: "one"}, {StartLine: 1, EndLine: 1, Text: "two"}}},
		{"white space runs", "go", "a.go", "// agent:   make\tTotal  skip\n//    negative\n",
			[]instruction{{StartLine: 0, EndLine: 1, Text: "make Total skip negative"}}},
		{"python", "python", "a.py", "def f():\n    # agent: return early on None\n    pass\n",
			[]instruction{{StartLine: 1, EndLine: 1, Text: "return early on None"}}},
		{"lua", "lua", "a.lua", "-- agent: cache the result\nlocal x = 1\n",
			[]instruction{{StartLine: 0, EndLine: 0, Text: "cache the result"}}},
		{"lisp double semicolon", "emacs-lisp", "a.el", ";; agent: use pcase\n(defun f ())\n",
			[]instruction{{StartLine: 0, EndLine: 0, Text: "use pcase"}}},
		{"sql by extension, no languageId", "", "q.sql", "-- agent: add an index\nSELECT 1;\n",
			[]instruction{{StartLine: 0, EndLine: 0, Text: "add an index"}}},
		{"CRLF", "go", "a.go", "// agent: fix it\r\nfunc f() {}\r\n",
			[]instruction{{StartLine: 0, EndLine: 0, Text: "fix it"}}},
		{"a hash is not a Go comment", "go", "a.go", "# agent: no\n", nil},
		{"a trailing comment is not an instruction", "go", "a.go", "x := 1 // agent: no\n", nil},
		{"agent: inside the text is not an instruction", "go", "a.go", "// the agent: no\n", nil},
		{"nothing to do", "go", "a.go", "// agent:\nfunc f() {}\n", nil},
		{"a string is not a comment", "go", "a.go", "s := \"// agent: no\"\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := instructions(tc.text, markersFor(tc.lang, tc.file))
			if len(got) != len(tc.want) {
				t.Fatalf("instructions = %+v; want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.StartLine != w.StartLine || g.EndLine != w.EndLine || g.Text != w.Text || len(g.Lines) != g.EndLine-g.StartLine+1 {
					t.Errorf("instruction %d = %+v; want %+v", i, g, w)
				}
			}
		})
	}
}

// TestInstructionAtReadsOnlyItsRun: instructionAt, which reads only the
// run of comment lines around the line asked about, answers for every
// line of 3,000 documents made of instruction, comment, empty-comment,
// code and blank lines (LF and CRLF, two comment styles) what a scan of
// the whole document answers.
func TestInstructionAtReadsOnlyItsRun(t *testing.T) {
	kinds := []string{"// agent: do one thing", "// more of it", "//", "# agent: hash", "# more", "x := 1", "", "\t// agent:  indented", "// agent:", "  // continued"}
	r := rand.New(rand.NewPCG(5, 6))
	found := 0
	for doc := range 3000 {
		var lines []string
		for range r.IntN(12) {
			l := kinds[r.IntN(len(kinds))]
			if r.IntN(4) == 0 {
				l += "\r"
			}
			lines = append(lines, l)
		}
		text := strings.Join(lines, "\n")
		if r.IntN(2) == 0 {
			text += "\n"
		}
		markers := markersFor([]string{"go", "php", ""}[doc%3], "a.go")
		all := instructions(text, markers)
		for line := range len(lines) + 2 {
			var want instruction
			wantOK := false
			for _, in := range all {
				if line >= in.StartLine && line <= in.EndLine {
					want, wantOK = in, true
					break
				}
			}
			got, ok := instructionAt(text, markers, line)
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Fatalf("document %q, markers %q, line %d: instructionAt = %+v, %v; the whole scan says %+v, %v", text, markers, line, got, ok, want, wantOK)
			}
			if ok {
				found++
			}
		}
	}
	if found < 1000 {
		t.Fatalf("only %d lines were in an instruction: the documents do not exercise instructionAt", found)
	}
}
