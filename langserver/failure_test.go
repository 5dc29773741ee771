package langserver

import (
	"strings"
	"testing"
	"time"
)

// TestBrokenServersFailClearlyAndBounded: a missing, crashing or silent
// language server gives a tool result that names it and says what went
// wrong, within the bound (Timeout), and a second call does not wait
// again for a server that just failed.
func TestBrokenServersFailClearlyAndBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"missing", Config{Command: "no-such-language-server"}, []string{"language server no-such-language-server", "not installed"}},
		{"crashing", Config{Command: "sh", Args: []string{"-c", "echo boom >&2; exit 3"}}, []string{"language server sh", "exit code 3", "boom"}},
		{"silent", Config{Command: "sleep", Args: []string{"600"}}, []string{"language server sleep", "no answer within 10s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, dir := goWorkspace(t, "greet")
			ts := Tools(Env{Workspace: ws, Source: newPool(t, dir, map[string]Config{"go": tc.cfg})})
			start := time.Now()
			res := run(t, ts, "references", map[string]any{"file": "order/summary.go", "symbol": "Total"})
			if took := time.Since(start); took > Timeout+2*time.Second {
				t.Errorf("the call took %s; want at most %s", took, Timeout)
			}
			if !res.IsError {
				t.Fatalf("result is not an error: %s", res.Text)
			}
			for _, w := range append(tc.want, "Use grep and read_file instead") {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %q lacks %q", res.Text, w)
				}
			}
			start = time.Now()
			again := run(t, ts, "hover", map[string]any{"file": "order/summary.go", "symbol": "Total"})
			if took := time.Since(start); took > time.Second || !again.IsError {
				t.Errorf("second call: %s after %s; want the same failure at once", again.Text, took)
			}
		})
	}
}
