// Package redact is agentls's one definition of a secret: by name (the
// environment variables whose values are secrets, SecretName), by value
// (the values of those variables, the API key, what the base URL carries)
// and by shape (the prefixes providers put on their keys, private key
// blocks, signed tokens). It hides them in text that agentls writes down or
// sends on: the session store, recordings, reports, logs, messages to the
// editor and tool results to the model. It imports nothing of agentls, so
// every package can use it.
package redact

import (
	"slices"
	"strings"
)

// Text replaces a secret wherever agentls writes text down.
const Text = "[redacted]"

// MinSecretLen is the shortest secret a Redactor replaces: a shorter "key" (a
// test value such as "x") would mangle ordinary text and protects nothing.
const MinSecretLen = 8

// Redactor knows the secret values to hide. Every Redactor, the zero value
// included, also hides the secrets of a known shape (hideShapes).
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
	for _, secret := range r.all() {
		if strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, Text)
		}
	}
	return hideShapes(s)
}

// all is what r hides by value: its own secrets and the configured ones
// (Configure).
func (r Redactor) all() []string {
	c := configuredSecrets()
	if len(c) == 0 {
		return r.secrets
	}
	return append(slices.Clone(r.secrets), c...)
}
