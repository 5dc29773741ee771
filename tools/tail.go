package tools

import "sync"

// Tail keeps the last Max bytes written to it: the end of a long-lived
// program's stderr (a language server, an MCP server), to say why it
// failed. Safe for concurrent use.
type Tail struct {
	Max int

	mu sync.Mutex // guards b
	b  []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.Max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.Max:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
