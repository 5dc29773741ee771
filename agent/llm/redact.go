package llm

import "github.com/agentls/agentls/agent/redact"

// RedactedText replaces a secret wherever agentls writes text down.
const RedactedText = redact.Text

// MinSecretLen is the shortest secret Redact replaces: a shorter "key" (a
// test value such as "x") would mangle ordinary text and protects nothing.
const MinSecretLen = redact.MinSecretLen

// Redact returns s with every occurrence of each secret replaced by
// RedactedText (see redact.Redactor). It is the safety net for text that may
// quote a file or a command output holding the API key, applied wherever
// such text is persisted: the session store and reports.
func Redact(s string, secrets ...string) string {
	return redact.New(secrets...).String(s)
}
