package lsptest

import (
	"testing"

	"go.lsp.dev/protocol"
)

func TestApplyChange(t *testing.T) {
	pos := func(l, c uint32) protocol.Position { return protocol.Position{Line: l, Character: c} }
	for _, tc := range []struct {
		name, text string
		start, end protocol.Position
		newText    string
		want       string
		wantErr    bool
	}{
		{"insert ascii", "abc", pos(0, 1), pos(0, 1), "X", "aXbc", false},
		{"after emoji", "😀b", pos(0, 2), pos(0, 3), "c", "😀c", false},
		{"replace emoji", "a😀b", pos(0, 1), pos(0, 3), "世", "a世b", false},
		{"inside surrogate pair", "a😀b", pos(0, 2), pos(0, 2), "x", "", true},
		{"second line crlf", "ab\r\ncd", pos(1, 0), pos(1, 1), "X", "ab\r\nXd", false},
		{"end of crlf line", "ab\r\ncd", pos(0, 2), pos(0, 2), "!", "ab!\r\ncd", false},
		{"between cr and lf", "ab\r\ncd", pos(0, 3), pos(0, 3), "!", "", true},
		{"past line end", "ab\ncd", pos(0, 5), pos(0, 5), "!", "", true},
		{"join lines", "ab\ncd", pos(0, 1), pos(1, 1), "", "ad", false},
		{"missing line", "ab", pos(3, 0), pos(3, 0), "x", "", true},
		{"end before start", "abc", pos(0, 2), pos(0, 1), "x", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyChange(tc.text, protocol.Range{Start: tc.start, End: tc.end}, tc.newText)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ApplyChange(%q) = %q, %v; want %q (error %v)", tc.text, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
