package lsp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// testCommands are extra commands the tests register.
type sleepArgs struct {
	Millis int `json:"millis"`
}

type echoArgs struct {
	Text string `json:"text"`
}

func (a *echoArgs) Validate() error {
	if a.Text == "" {
		return errors.New(`"text" must not be empty`)
	}
	return nil
}

var (
	// cmdSleep sleeps, or until cancelled.
	cmdSleep = &server.Command[sleepArgs, any]{
		Name: "test.sleep",
		Run: func(ctx context.Context, _ *server.Invocation, a sleepArgs) (any, error) {
			select {
			case <-time.After(time.Duration(a.Millis) * time.Millisecond):
				return "slept", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
	cmdEcho = &server.Command[echoArgs, any]{
		Name: "test.echo",
		Run: func(_ context.Context, _ *server.Invocation, a echoArgs) (any, error) {
			return map[string]string{"text": a.Text}, nil
		},
	}
	cmdPanic = &server.Command[struct{}, any]{
		Name: "test.panic",
		Run: func(context.Context, *server.Invocation, struct{}) (any, error) {
			var m map[string]int
			m["boom"] = 1 // a nil-map write: a real runtime panic
			return nil, nil
		},
	}
)

// session is a server and a fake editor connected to it.
type session struct {
	srv    *server.Server
	c      *lsptest.Client
	served <-chan error
	level  *slog.LevelVar
}

func newSession(t testing.TB, cfg lsptest.Config, opts ...server.Option) *session {
	t.Helper()
	level := new(slog.LevelVar)
	base := []server.Option{
		server.WithVersion("test-1"),
		server.WithLogger(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}), level),
		server.WithEnv(func(string) string { return "" }),
		server.WithCommands(cmdSleep, cmdEcho, cmdPanic),
	}
	srv := server.New(append(base, opts...)...)
	c, served := lsptest.Connect(t, srv, cfg)
	return &session{srv: srv, c: c, served: served, level: level}
}

// initialized is newSession followed by a successful initialize.
func initialized(t testing.TB, cfg lsptest.Config, opts ...server.Option) *session {
	t.Helper()
	s := newSession(t, cfg, opts...)
	if _, err := s.c.Initialize(ctx(t)); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return s
}

// ctx is a context that ends with a generous timeout, so a hung test fails
// instead of hanging.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// testWriter sends server logs to the test log (shown only on failure or -v).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Logf("server: %s", p)
	return len(p), nil
}

// code returns the JSON-RPC error code of err, or 0.
func code(err error) jsonrpc2.Code {
	var e *jsonrpc2.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// drainFrames reads LSP frames from r until it ends and reports the first
// malformed one.
func drainFrames(r io.Reader) error {
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
