package langserver

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentls/agentls/workspace"
)

// checkRename is the rule every text edit of a language server's rename
// answer must pass before anything is applied: it replaces the old name
// with the new one and nothing else. An edit whose range holds exactly
// oldName and whose new text is newName passes; so does an edit over a
// larger range (some servers send those) when its new text is the range's
// text with each whole-word occurrence of oldName, and nothing else,
// replaced by newName. Anything else (another text, an insertion, a
// deletion, a file without the name) refuses the whole rename: a server
// could otherwise change any text under the rename's name (a Makefile
// recipe) that the user allowed without seeing it.
func checkRename(text, oldName, newName string, edits []workspace.TextEdit) error {
	for i, e := range edits {
		start, err := workspace.OffsetOf(text, e.Range.Start)
		if err != nil {
			return fmt.Errorf("edit %d: %w", i+1, err)
		}
		end, err := workspace.OffsetOf(text, e.Range.End)
		if err != nil || end < start {
			return fmt.Errorf("edit %d: its range does not fit the file", i+1)
		}
		old := text[start:end]
		if old == oldName && e.NewText == newName {
			continue
		}
		want, n := renameWords(text, start, end, oldName, newName)
		if n == 0 || e.NewText != want {
			return fmt.Errorf("edit %d (line %d) replaces %s with %s, which is not %s renamed to %s",
				i+1, e.Range.Start.Line+1, quoteCut(old), quoteCut(e.NewText), oldName, newName)
		}
	}
	return nil
}

// shortName is the name a rename of symbol changes: its last component
// ("T.Method" and "pkg.Func" rename Method and Func), as locate finds it.
func shortName(symbol string) string {
	name := strings.TrimSpace(symbol)
	if i := strings.LastIndexByte(name, '.'); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	return name
}

// renameWords returns text[start:end] with each occurrence of oldName that
// is a whole word of text (no identifier character on either side, looked
// at in the whole file) replaced by newName, and how many there were.
func renameWords(text string, start, end int, oldName, newName string) (string, int) {
	var b strings.Builder
	n := 0
	i := start
	for i < end {
		j := strings.Index(text[i:end], oldName)
		if j < 0 || oldName == "" {
			break
		}
		at := i + j
		b.WriteString(text[i:at])
		if wordAt(text, at, at+len(oldName)) {
			b.WriteString(newName)
			n++
		} else {
			b.WriteString(oldName)
		}
		i = at + len(oldName)
	}
	b.WriteString(text[i:end])
	return b.String(), n
}

// wordAt reports whether text[start:end] has no identifier character
// right before or right after it.
func wordAt(text string, start, end int) bool {
	if r, _ := utf8.DecodeLastRuneInString(text[:start]); start > 0 && identRune(r) {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(text[end:]); end < len(text) && identRune(r) {
		return false
	}
	return true
}

func identRune(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// quoteCut quotes s for a message, cut to a readable length.
func quoteCut(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
	}
	return fmt.Sprintf("%q", s)
}
