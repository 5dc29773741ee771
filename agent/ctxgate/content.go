package ctxgate

import (
	"strings"

	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/internal/lazyregexp"
)

// assignment is a dotenv-style assignment: an upper-case variable name
// (optionally after export) at the start of a line or after white space
// (a tool's line prefix: grep's "path:3: ", read_file's number and tab),
// "=" with nothing around it, and a literal value: quoted, or running to
// the end of the line or the next white space.
var assignment = lazyregexp.New(`(?m)(^|[ \t])((?:export[ \t]+)?[A-Z][A-Z0-9_]*)=("[^"\n]*"|'[^'\n]*'|[^\s"'$#][^\s]*)`)

// Assignments returns s with the value of every dotenv-style assignment
// whose name marks a secret (redact.SecretName: API_TOKEN, DB_PASSWORD,
// STRIPE_SECRET_KEY) replaced by redact.Text: the shape of a .env file
// however it reached the model (a link named docs/setup.txt, a prompt
// file, a grep, a language server's quote). The rule is narrow on purpose:
// only upper-case names, "=" without spaces (so code such as
// `token = load()` or `f(token=t)` is untouched), and never a value that
// refers to something else ($VAR, $(cmd), ${VAR}), a placeholder
// (<your-key>, changeme, xxxx), a number or a boolean.
func Assignments(s string) string {
	if !strings.Contains(s, "=") {
		return s
	}
	return assignment.ReplaceAllStringFunc(s, func(m string) string {
		sub := assignment.FindStringSubmatch(m)
		lead, name, value := sub[1], sub[2], sub[3]
		bare := strings.TrimPrefix(strings.TrimPrefix(name, "export"), " ")
		bare = strings.TrimLeft(bare, " \t")
		if !redact.SecretName(bare) || !literalSecret(value) {
			return m
		}
		return lead + name + "=" + redact.Text
	})
}

// literalSecret reports whether an assignment's value (quotes included)
// may be a secret: not empty, not a reference, a placeholder, a number or
// a boolean.
func literalSecret(v string) bool {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	v = strings.TrimSpace(v)
	if len(v) < 4 || v == redact.Text || strings.ContainsAny(v, "$<>{}") {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "none", "null", "nil", "changeme", "change-me", "change_me", "secret", "password", "placeholder", "redacted", "example", "todo":
		return false
	}
	if strings.Trim(v, "0123456789.") == "" || strings.Trim(v, "xX*.-_") == "" {
		return false // a number, or xxxx / **** / ...
	}
	low := strings.ToLower(v)
	for _, p := range []string{"your-", "your_", "my-", "my_", "replace", "insert", "enter-", "enter_"} {
		if strings.HasPrefix(low, p) {
			return false
		}
	}
	return true
}
