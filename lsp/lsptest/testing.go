package lsptest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentls/agentls/lsp/server"
)

// Helpers the tests of the protocol server (lsp/server) and of the agent
// face (lsp) share.

// Context is a context that ends with a generous timeout, so a hung test
// fails instead of hanging.
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Code returns the JSON-RPC error code of err, or 0.
func Code(err error) jsonrpc2.Code {
	var e *jsonrpc2.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// UserSettingsDir writes settings as the settings file of a fresh user
// agentls folder and returns the folder (lsp.ServiceOptions.UserDir).
func UserSettingsDir(t testing.TB, settings map[string]any) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agentls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// MustJSON is the JSON of v; it fails the test when v has none.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// LogWriter sends server logs to the test log (shown only on failure or
// -v).
func LogWriter(t testing.TB) io.Writer { return testWriter{t} }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Logf("server: %s", p)
	return len(p), nil
}

// DrainFrames reads LSP frames from r until it ends and reports the first
// malformed one.
func DrainFrames(r io.Reader) error {
	st := jsonrpc2.NewHeaderStream(struct {
		io.Reader
		io.Writer
		io.Closer
	}{r, io.Discard, io.NopCloser(nil)})
	for {
		_, _, err := st.Read(context.Background())
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe), errors.Is(err, net.ErrClosed):
			return nil
		default:
			return err
		}
	}
}

// SleepArgs are the arguments of Sleep.
type SleepArgs struct {
	Millis int `json:"millis"`
}

// EchoArgs are the arguments of Echo.
type EchoArgs struct {
	Text string `json:"text"`
}

// Validate refuses an empty text.
func (a *EchoArgs) Validate() error {
	if a.Text == "" {
		return errors.New(`"text" must not be empty`)
	}
	return nil
}

// Commands the tests register (NewServer does).
var (
	// Sleep (test.sleep) sleeps, or until cancelled.
	Sleep = &server.Command[SleepArgs, any]{
		Name: "test.sleep",
		Run: func(ctx context.Context, _ *server.Invocation, a SleepArgs) (any, error) {
			select {
			case <-time.After(time.Duration(a.Millis) * time.Millisecond):
				return "slept", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
	// Echo (test.echo) answers {"text": text}: a round trip that orders
	// what the test sent before it.
	Echo = &server.Command[EchoArgs, any]{
		Name: "test.echo",
		Run: func(_ context.Context, _ *server.Invocation, a EchoArgs) (any, error) {
			return map[string]string{"text": a.Text}, nil
		},
	}
	// Panic (test.panic) panics.
	Panic = &server.Command[struct{}, any]{
		Name: "test.panic",
		Run: func(context.Context, *server.Invocation, struct{}) (any, error) {
			var m map[string]int
			m["boom"] = 1 // a nil-map write: a real runtime panic
			return nil, nil
		},
	}
)

// NewServer is a server for tests: version "test-1", logs to the test log
// (level info unless opts set one), the Sleep, Echo and Panic commands,
// then opts.
func NewServer(t testing.TB, opts ...server.Option) *server.Server {
	t.Helper()
	level := new(slog.LevelVar)
	base := []server.Option{
		server.WithVersion("test-1"),
		server.WithLogger(slog.NewTextHandler(LogWriter(t), &slog.HandlerOptions{Level: level}), level),
		server.WithCommands(Sleep, Echo, Panic),
	}
	return server.New(append(base, opts...)...)
}

// Session is a test server (NewServer) and a fake editor connected to it.
type Session struct {
	Srv    *server.Server
	C      *Client
	Served <-chan error // Serve's result
}

// NewSession connects a fake editor with cfg to NewServer(t, opts...).
func NewSession(t testing.TB, cfg Config, opts ...server.Option) *Session {
	t.Helper()
	srv := NewServer(t, opts...)
	c, served := Connect(t, srv, cfg)
	return &Session{Srv: srv, C: c, Served: served}
}

// Initialized is NewSession followed by a successful initialize.
func Initialized(t testing.TB, cfg Config, opts ...server.Option) *Session {
	t.Helper()
	s := NewSession(t, cfg, opts...)
	if _, err := s.C.Initialize(Context(t)); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return s
}
