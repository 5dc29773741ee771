package lsp_test

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/lsp/lsptest"
)

// pieces mixes ASCII, CJK (one UTF-16 unit each), emoji (surrogate pairs),
// combining marks and line breaks, LF and CRLF.
var pieces = []string{"a", "Go", " ", "func", "世", "界", "語", "😀", "🚀", "👩‍💻", "é", "e\u0301", "\n", "\r\n", "\t", "{", "}", "ß", "Ω", "𝔘"}

// TestDidChange10000Edits: 10,000 incremental edits at UTF-16 positions
// leave the server's text equal to an independent reference application.
func TestDidChange10000Edits(t *testing.T) {
	s := initialized(t, lsptest.Config{})
	name := filepath.Join(t.TempDir(), "mixed.txt")
	r := rand.New(rand.NewPCG(42, 7))
	text := randomText(r, 400)
	if err := s.c.OpenDocument(ctx(t), name, "plaintext", text); err != nil {
		t.Fatal(err)
	}
	const total = 10000
	edits := 0
	for edits < total {
		n := 1 + r.IntN(3) // changes per notification, applied in sequence
		if edits+n > total {
			n = total - edits
		}
		changes := make([]lsptest.Change, n)
		for i := range changes {
			start, end := randomSpan(r, text)
			newText := ""
			if r.IntN(3) > 0 {
				newText = randomText(r, r.IntN(6))
			}
			if len(utf16.Encode([]rune(text))) > 3000 { // keep the document bounded
				newText = ""
			}
			rng := protocol.Range{Start: lsptest.PositionAt(text, start), End: lsptest.PositionAt(text, end)}
			changes[i] = lsptest.Change{Range: &rng, Text: newText}
			var err error
			if text, err = lsptest.ApplyChange(text, rng, newText); err != nil {
				t.Fatalf("reference: %v", err)
			}
		}
		got, err := s.c.ChangeDocument(ctx(t), name, changes...)
		if err != nil {
			t.Fatal(err)
		}
		if got != text {
			t.Fatal("client copy diverged from the reference")
		}
		edits += n
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "sync"}); err != nil {
		t.Fatal(err)
	}
	doc, ok := s.srv.Buffers().Get(name)
	if !ok {
		t.Fatal("document not open")
	}
	if doc.Text != text {
		t.Errorf("after %d edits the server text differs from the reference:\nserver: %q\nwant:   %q", total, doc.Text, text)
	}
	if !strings.ContainsAny(text, "世界語") && !strings.ContainsRune(text, '😀') {
		t.Log("note: final text has no CJK or emoji left")
	}
}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// randomSpan picks a [start, end) span of UTF-16 indexes of text that does
// not split a surrogate pair or a CRLF.
func randomSpan(r *rand.Rand, text string) (int, int) {
	u := utf16.Encode([]rune(text))
	valid := make([]int, 0, len(u)+1)
	for i := 0; i <= len(u); i++ {
		if i > 0 && i < len(u) && u[i] >= 0xDC00 && u[i] <= 0xDFFF {
			continue // inside a surrogate pair
		}
		if i > 0 && i < len(u) && u[i-1] == '\r' && u[i] == '\n' {
			continue // between \r and \n
		}
		valid = append(valid, i)
	}
	a, b := valid[r.IntN(len(valid))], valid[r.IntN(len(valid))]
	if a > b {
		a, b = b, a
	}
	if b-a > 20 { // mostly small edits
		b = a
		for _, v := range valid {
			if v > a && v-a <= 1+r.IntN(8) {
				b = v
			}
		}
	}
	return a, b
}
