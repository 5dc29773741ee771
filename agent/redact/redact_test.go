package redact

import "testing"

func TestRedactorHidesEverySecretOfUsefulLength(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"no secrets", nil, "key sk-12345678", "key sk-12345678"},
		{"every occurrence", []string{"sk-12345678"}, "a sk-12345678 b sk-12345678", "a [redacted] b [redacted]"},
		{"several secrets", []string{"sk-12345678", "hunter2hunter2"}, "sk-12345678:hunter2hunter2", "[redacted]:[redacted]"},
		{"short secret ignored", []string{"x", "1234567"}, "x marks 1234567", "x marks 1234567"},
		{"empty secret ignored", []string{""}, "text", "text"},
		{"secret of minimum length", []string{"12345678"}, "id 12345678", "id [redacted]"},
		{"absent secret", []string{"sk-12345678"}, "nothing here", "nothing here"},
		{"empty text", []string{"sk-12345678"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(tc.secrets...).String(tc.in); got != tc.want {
				t.Errorf("New(%q).String(%q) = %q; want %q", tc.secrets, tc.in, got, tc.want)
			}
		})
	}
}

func TestZeroRedactorChangesNothing(t *testing.T) {
	var r Redactor
	if got := r.String("sk-12345678"); got != "sk-12345678" {
		t.Errorf("Redactor{}.String = %q; want the text unchanged", got)
	}
}
