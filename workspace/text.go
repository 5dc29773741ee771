package workspace

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Position is a place in a text document as LSP counts it: a zero-based line
// and a zero-based offset in UTF-16 code units within that line.
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is a half-open span [Start, End) of a document.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Before reports whether p comes before q.
func (p Position) Before(q Position) bool {
	return p.Line < q.Line || p.Line == q.Line && p.Character < q.Character
}

// Empty reports whether r selects nothing.
func (r Range) Empty() bool { return r.Start == r.End }

// Intersects reports whether r and o share a position (touching counts).
func (r Range) Intersects(o Range) bool {
	return !o.End.Before(r.Start) && !r.End.Before(o.Start)
}

// TextEdit replaces the text of Range with NewText.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// ErrPosition reports a position that does not exist in a document.
var ErrPosition = errors.New("position outside the document")

// OffsetOf converts a Position to a byte offset into text.
//
// A character offset past the end of its line is clamped to the line end, as
// the LSP specification asks; a character offset that falls inside a
// surrogate pair is rounded down to the start of that rune. A line past the
// last line is an error, except the line just after a final newline-less
// line's end, which clients send for "end of document".
func OffsetOf(text string, pos Position) (int, error) {
	offset := 0
	for line := uint32(0); line < pos.Line; line++ {
		i := indexNewline(text[offset:])
		if i < 0 {
			// Positions one line past the end denote the end of the document.
			if line+1 == pos.Line && pos.Character == 0 {
				return len(text), nil
			}
			return 0, fmt.Errorf("line %d: %w (document has %d lines)", pos.Line, ErrPosition, line+1)
		}
		offset += i + 1
	}
	lineText := text[offset:]
	if i := indexNewline(lineText); i >= 0 {
		lineText = lineText[:i]
		// Treat "\r\n" as the line end: the \r is not part of the line.
		if i > 0 && lineText[i-1] == '\r' {
			lineText = lineText[:i-1]
		}
	}
	units := uint32(0)
	for i, r := range lineText {
		if units >= pos.Character {
			return offset + i, nil
		}
		n := uint32(1)
		if r >= 0x10000 {
			n = 2
		}
		if units+n > pos.Character {
			// Inside a surrogate pair: round down to the rune start.
			return offset + i, nil
		}
		units += n
	}
	return offset + len(lineText), nil
}

// PositionOf converts a byte offset into text to a Position.
func PositionOf(text string, offset int) Position {
	if offset > len(text) {
		offset = len(text)
	}
	if offset < 0 {
		offset = 0
	}
	var line uint32
	lineStart := 0
	for i := 0; i < offset; i++ {
		if text[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return Position{Line: line, Character: UTF16Len(text[lineStart:offset])}
}

// UTF16Len is the number of UTF-16 code units needed to encode s.
func UTF16Len(s string) uint32 {
	n := uint32(0)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		n += uint32(utf16.RuneLen(r))
		if r == utf8.RuneError && size == 1 {
			// An invalid byte: count it as one unit, as editors do for U+FFFD.
			n = n - uint32(utf16.RuneLen(r)) + 1
		}
	}
	return n
}

// ApplyEdits applies non-overlapping edits, all computed against text, and
// returns the new text. Edits are sorted by start position; edits at the same
// start keep their given order. Overlapping edits are an error and leave text
// unchanged.
func ApplyEdits(text string, edits []TextEdit) (string, error) {
	type span struct {
		start, end int
		newText    string
		order      int
	}
	spans := make([]span, 0, len(edits))
	for i, e := range edits {
		start, err := OffsetOf(text, e.Range.Start)
		if err != nil {
			return text, fmt.Errorf("edit %d start: %w", i, err)
		}
		end, err := OffsetOf(text, e.Range.End)
		if err != nil {
			return text, fmt.Errorf("edit %d end: %w", i, err)
		}
		if end < start {
			return text, fmt.Errorf("edit %d: range end before start", i)
		}
		spans = append(spans, span{start, end, e.NewText, i})
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := make([]byte, 0, len(text))
	last := 0
	for _, s := range spans {
		if s.start < last {
			return text, fmt.Errorf("edit %d overlaps an earlier edit", s.order)
		}
		out = append(out, text[last:s.start]...)
		out = append(out, s.newText...)
		last = s.end
	}
	out = append(out, text[last:]...)
	return string(out), nil
}

func indexNewline(s string) int { return strings.IndexByte(s, '\n') }
