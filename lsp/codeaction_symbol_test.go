package lsp

import (
	"strings"
	"testing"
)

// TestSymbolAtSkipsKeywords: the code action asks about identifiers, never
// about a language keyword under the cursor or selected.
func TestSymbolAtSkipsKeywords(t *testing.T) {
	const src = "package main\n\nfunc Greet(name string) string {\n\treturn \"Hello, \" + name\n}\n"
	at := func(s string, k int) int { return strings.Index(src, s) + k }
	tests := []struct {
		name       string
		start, end int
		want       string
	}{
		{"cursor on func", at("func", 1), at("func", 1), ""},
		{"cursor on package", at("package", 0), at("package", 0), ""},
		{"cursor on return", at("return", 3), at("return", 3), ""},
		{"selected func", at("func", 0), at("func", 4), ""},
		{"cursor on Greet", at("Greet", 2), at("Greet", 2), "Greet"},
		{"selected name", at("name", 0), at("name", 4), "name"},
		{"cursor on main", at("main", 1), at("main", 1), "main"},
		{"one character of Greet selected", at("Greet", 0), at("Greet", 1), "Greet"},
		{"part of name selected", at("name", 1), at("name", 3), "name"},
		{"Greet selected with the space before it", at("Greet", 0) - 1, at("Greet", 5), "Greet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := symbolAt(src, tt.start, tt.end); got != tt.want {
				t.Errorf("symbolAt(%q) = %q; want %q", src[tt.start:tt.end], got, tt.want)
			}
		})
	}
	for _, kw := range []string{"def", "function", "fn", "class", "let"} {
		if got := symbolAt(kw+" x", 1, 1); got != "" {
			t.Errorf("symbolAt(%q at 1) = %q; want \"\"", kw+" x", got)
		}
	}
}
