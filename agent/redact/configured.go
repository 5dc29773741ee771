package redact

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// configured are the secrets the process was configured with beyond its
// settings and environment: the env values and headers of MCP servers from
// every source (the user's settings, a workspace .mcp.json, an ACP
// client's session/new). Every Redactor hides them, whenever it was made:
// a secret once configured is hidden at every sink (the model request,
// ACP updates, the store, logs) for the rest of the process.
var configured struct {
	mu   sync.Mutex // serialises Configure
	list atomic.Pointer[[]string]
}

// Configure adds secrets (those shorter than MinSecretLen are ignored) to
// what every Redactor hides.
func Configure(secrets ...string) {
	configured.mu.Lock()
	defer configured.mu.Unlock()
	var cur []string
	if p := configured.list.Load(); p != nil {
		cur = *p
	}
	next := slices.Clone(cur)
	for _, s := range secrets {
		if len(s) >= MinSecretLen && !slices.Contains(next, s) {
			next = append(next, s)
		}
	}
	if len(next) > len(cur) {
		configured.list.Store(&next)
	}
}

// configuredSecrets is what Configure added so far.
func configuredSecrets() []string {
	if p := configured.list.Load(); p != nil {
		return *p
	}
	return nil
}

// ConfigSecrets returns the secrets among a configuration's variables or
// headers (name to value): the values whose names mark secrets
// (SecretName; an Authorization header, also its credentials without the
// scheme), the secrets a URL value carries (URLSecrets), and every value
// that looks generated (a random-looking word of at least 16 characters:
// an X-Custom-Header: a8Fj29... is a token whatever its name).
func ConfigSecrets(kv map[string]string) []string {
	var out []string
	for k, v := range kv {
		if v == "" {
			continue
		}
		switch {
		case SecretName(k) || strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Proxy-Authorization"):
			out = append(out, v)
			if _, cred, ok := strings.Cut(v, " "); ok {
				out = append(out, strings.TrimSpace(cred))
			}
		case len(v) >= 16 && !strings.ContainsAny(v, " \t\n/") && randomLooking(v):
			out = append(out, v)
		}
		out = append(out, URLSecrets(v)...)
	}
	slices.Sort(out) // a stable list for a map's random order
	return out
}
