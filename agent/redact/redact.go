// Package redact hides secret values (the API key) in text that agentls
// writes down: the session store, reports. It imports nothing of agentls, so
// every package that persists text can use it.
package redact

import "strings"

// Text replaces a secret wherever agentls writes text down.
const Text = "[redacted]"

// MinSecretLen is the shortest secret a Redactor replaces: a shorter "key" (a
// test value such as "x") would mangle ordinary text and protects nothing.
const MinSecretLen = 8

// Redactor knows the secret values to hide. The zero value hides nothing.
type Redactor struct {
	secrets []string // each at least MinSecretLen bytes, in the order given
}

// New returns a Redactor for secrets. Secrets shorter than MinSecretLen are
// ignored.
func New(secrets ...string) Redactor {
	var keep []string
	for _, s := range secrets {
		if len(s) >= MinSecretLen {
			keep = append(keep, s)
		}
	}
	return Redactor{secrets: keep}
}

// String returns s with every occurrence of each secret replaced by Text. It
// is the safety net for text that may quote a file or a command output
// holding the API key (a tool result of `read_file .env`).
func (r Redactor) String(s string) string {
	for _, secret := range r.secrets {
		if strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, Text)
		}
	}
	return s
}
