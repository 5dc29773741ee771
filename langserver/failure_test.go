package langserver

import (
	"context"
	"path/filepath"
	"strconv"
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

// TestCloseDoesNotWaitOnABusyServer: a server that never answers shutdown
// (busy loading a workspace) is killed after the short grace, so the
// host's end (the command line's exit) is not held for seconds.
func TestCloseDoesNotWaitOnABusyServer(t *testing.T) {
	_, dir := goWorkspace(t, "greet")
	script := fakeServer(t, dir, "deaf_to_shutdown.py")
	p := NewPool(time.Minute)
	p.Configure([]string{dir}, map[string]Config{"go": {Command: "python3", Args: []string{script}}}, "")
	// Started and initialized (it answers that), then asked nothing.
	if _, err := p.client(context.Background(), languageOf(filepath.Join(dir, "order/total.go"))); err != nil {
		t.Fatalf("start the server: %v", err)
	}
	if r := p.Running(); r["go"] == "" {
		t.Fatalf("the server is not running: %v", r)
	}
	start := time.Now()
	p.Close()
	if took := time.Since(start); took > 2*closeGrace+time.Second {
		t.Errorf("Close took %s with a server deaf to shutdown; want about %s", took, closeGrace)
	}
	if r := p.Running(); len(r) != 0 {
		t.Errorf("servers still running after Close: %v", r)
	}
}

// TestFirstAnswerMayTakeLongerThanLaterOnes: a server still loading the
// workspace when a tool first asks it something (gopls on a cold cache or
// a busy machine) is waited for up to FirstTimeout, so a first-day rename
// does not fail on "no answer within 10s"; later requests of the same
// method keep Timeout.
func TestFirstAnswerMayTakeLongerThanLaterOnes(t *testing.T) {
	ws, dir := goWorkspace(t, "greet")
	script := fakeServer(t, dir, "slow_first_answer.py")
	slow := Timeout + time.Second
	ts := Tools(Env{Workspace: ws, Source: newPool(t, dir, map[string]Config{"go": {Command: "python3", Args: []string{script, strconv.FormatFloat(slow.Seconds(), 'f', -1, 64)}}})})
	start := time.Now()
	res := run(t, ts, "references", map[string]any{"file": "order/summary.go", "symbol": "Total"})
	if strings.Contains(res.Text, "no answer within") {
		t.Fatalf("the first request, answered after %s, failed: %s", slow, res.Text)
	}
	if took := time.Since(start); took < slow {
		t.Fatalf("answered after %s; the server waits %s: the test did not test the slow first answer", took, slow)
	}
}
