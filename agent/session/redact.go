package session

import (
	"os"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent/redact"
)

// Secrets are the values agentls never writes down or shows, with the
// settings s: the API key, what the base URL carries as a secret (its user
// information and query values), and the values of environment variables
// whose names mark secrets (redact.SecretName). Every sink passes its text
// through the Redactor of these (NewRedactor).
func Secrets(s Settings, getenv func(string) string, environ []string) []string {
	out := []string{s.APIKey(getenv)}
	out = append(out, redact.URLSecrets(s.BaseURL)...)
	out = append(out, mcpSecrets(s, getenv)...)
	return append(out, redact.EnvSecrets(environ)...)
}

// RedactorCache returns the Redactor of the current settings, built again
// only when they change. Its zero value is ready to use.
type RedactorCache struct {
	mu  sync.Mutex // guards the fields below
	key string
	r   redact.Redactor
}

// Get returns the Redactor for s.
func (c *RedactorCache) Get(s Settings, getenv func(string) string) redact.Redactor {
	if getenv == nil {
		getenv = os.Getenv
	}
	k := s.APIKeyEnv + "\x00" + s.BaseURL + "\x00" + s.APIKey(getenv) + "\x00" + strings.Join(mcpSecrets(s, getenv), "\x00")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != k || c.key == "" {
		c.key, c.r = k, redact.New(Secrets(s, getenv, os.Environ())...)
	}
	return c.r
}
