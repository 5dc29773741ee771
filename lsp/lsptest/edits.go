package lsptest

import (
	"fmt"
	"sort"
	"unicode/utf16"

	"go.lsp.dev/protocol"
)

// ApplyChange is a reference implementation of one LSP text change: it
// replaces r (UTF-16 positions, as the spec counts them) in text with
// newText. It works on the UTF-16 code units of the text and shares no code
// with the server's workspace.ApplyEdits, so the two can check each other.
// It is strict: a position past the end of its line, inside a surrogate
// pair or between "\r" and "\n" is an error rather than clamped.
func ApplyChange(text string, r protocol.Range, newText string) (string, error) {
	u := utf16.Encode([]rune(text))
	start, err := offset16(u, r.Start)
	if err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	end, err := offset16(u, r.End)
	if err != nil {
		return "", fmt.Errorf("end: %w", err)
	}
	if end < start {
		return "", fmt.Errorf("range end %v before start %v", r.End, r.Start)
	}
	out := make([]uint16, 0, len(u)+len(newText))
	out = append(out, u[:start]...)
	out = append(out, utf16.Encode([]rune(newText))...)
	out = append(out, u[end:]...)
	return string(utf16.Decode(out)), nil
}

// offset16 converts a position to an index into the UTF-16 units u.
func offset16(u []uint16, p protocol.Position) (int, error) {
	i := 0
	for line := uint32(0); line < p.Line; line++ {
		j := indexUnit(u[i:], '\n')
		if j < 0 {
			return 0, fmt.Errorf("line %d does not exist", p.Line)
		}
		i += j + 1
	}
	end := len(u)
	if j := indexUnit(u[i:], '\n'); j >= 0 {
		end = i + j
		if end > i && u[end-1] == '\r' {
			end--
		}
	}
	at := i + int(p.Character)
	if at > end {
		return 0, fmt.Errorf("character %d past the end of line %d", p.Character, p.Line)
	}
	if at > 0 && at < len(u) && utf16.IsSurrogate(rune(u[at])) && u[at] >= 0xDC00 {
		return 0, fmt.Errorf("position %d:%d splits a surrogate pair", p.Line, p.Character)
	}
	return at, nil
}

func indexUnit(u []uint16, c uint16) int {
	for i, x := range u {
		if x == c {
			return i
		}
	}
	return -1
}

// PositionAt returns the position of UTF-16 index i of text (for tests that
// generate edits).
func PositionAt(text string, i int) protocol.Position {
	u := utf16.Encode([]rune(text))
	var line, col uint32
	for _, x := range u[:i] {
		if x == '\n' {
			line++
			col = 0
			continue
		}
		col++
	}
	return protocol.Position{Line: line, Character: col}
}

// applyTextEdits applies edits that are all relative to text (the
// workspace/applyEdit rule) and returns the new text and the same edits
// ordered last-first, so that they can be sent as successive didChange
// changes.
func applyTextEdits(text string, edits []protocol.TextEdit) (string, []protocol.TextEdit, error) {
	sorted := append([]protocol.TextEdit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return posLess(sorted[j].Range.Start, sorted[i].Range.Start)
	})
	for i := 1; i < len(sorted); i++ {
		if posLess(sorted[i-1].Range.Start, sorted[i].Range.End) {
			return "", nil, fmt.Errorf("overlapping edits")
		}
	}
	for _, e := range sorted {
		var err error
		if text, err = ApplyChange(text, e.Range, e.NewText); err != nil {
			return "", nil, err
		}
	}
	return text, sorted, nil
}

func posLess(a, b protocol.Position) bool {
	return a.Line < b.Line || (a.Line == b.Line && a.Character < b.Character)
}

// ApplyTextEdits applies edits that are all relative to text, as an
// editor applies one document's edits of a workspace/applyEdit.
func ApplyTextEdits(text string, edits []protocol.TextEdit) (string, error) {
	out, _, err := applyTextEdits(text, edits)
	return out, err
}
