package llm

import "strings"

// RedactedText replaces a secret wherever agentls writes text down.
const RedactedText = "[redacted]"

// MinSecretLen is the shortest secret Redact replaces: a shorter "key" (a
// test value such as "x") would mangle ordinary text and protects nothing.
const MinSecretLen = 8

// Redact returns s with every occurrence of each secret replaced by
// RedactedText. It is the safety net for text that may quote a file or a
// command output holding the API key (a tool result of `read_file .env`),
// applied wherever such text is persisted: the session store and reports.
func Redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) >= MinSecretLen && strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, RedactedText)
		}
	}
	return s
}
