package lsp_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// testAPIKey is the key the agent sessions run with; no message, log,
// reply or report may contain it.
const testAPIKey = "sk-test-SECRET-4f2a9"

// agentSession is a server with the agent service, a fake editor, a
// scripted model over real HTTP and a temporary workspace.
type agentSession struct {
	*session
	svc   *lsp.Service
	model *fakemodel.Server
	root  string
	logs  *syncLog
	init  *protocol.InitializeResult // the server's answer to initialize
}

type agentOpts struct {
	settings map[string]any // initializationOptions on top of the defaults
	svc      lsp.ServiceOptions
	noKey    bool
}

// newAgentSession writes files into a temporary workspace, starts the
// scripted model and an initialized session on it.
func newAgentSession(t testing.TB, turns []fakemodel.Turn, files map[string]string, cfg lsptest.Config, o agentOpts) *agentSession {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	settings := map[string]any{"baseURL": model.URL(), "model": "test-model", "validate": "off", "approval": "auto"}
	for k, v := range o.settings {
		settings[k] = v
	}
	cfg.Roots = []string{root}
	// The settings are the user's own (the user settings file), as a
	// user's would be: settings from the client are asked about first.
	if o.svc.UserDir == "" {
		o.svc.UserDir = lsptest.UserSettingsDir(t, settings)
	}
	logs := &syncLog{}
	o.svc.Getenv = func(k string) string {
		if k == "OPENAI_API_KEY" && !o.noKey {
			return testAPIKey
		}
		return ""
	}
	svc := lsp.NewService(o.svc)
	opts := append(svc.Options(), server.WithLogger(logs.handler(t), nil))
	s := newSession(t, cfg, opts...)
	init, err := s.c.Initialize(ctx(t))
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &agentSession{session: s, svc: svc, model: model, root: root, logs: logs, init: init}
}

// path is the absolute path of a workspace file.
func (a *agentSession) path(name string) string {
	return filepath.Join(a.root, filepath.FromSlash(name))
}

// open opens a workspace file in the fake editor with its disk text.
func (a *agentSession) open(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(a.path(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.c.OpenDocument(ctx(t), a.path(name), "go", string(b)); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run sends agentls.run and decodes the reply.
func (a *agentSession) run(t testing.TB, args any) (lsp.RunReply, error) {
	t.Helper()
	return a.c.Run(t, ctx(t), args)
}

// checkNoKey fails when the API key shows up anywhere the user or a log
// could see it.
func (a *agentSession) checkNoKey(t testing.TB) {
	t.Helper()
	if strings.Contains(a.c.Transcript(), testAPIKey) {
		t.Errorf("the API key is in the JSON-RPC transcript")
	}
	if strings.Contains(a.logs.String(), testAPIKey) {
		t.Errorf("the API key is in the server log")
	}
	_ = filepath.WalkDir(filepath.Join(a.root, ".agentls"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), testAPIKey) {
				t.Errorf("the API key is in %s", p)
			}
		}
		return nil
	})
}

// progressOf returns the one progress record whose begin title has prefix.
func progressOf(s *lsptest.State, titlePrefix string) *lsptest.ProgressRecord {
	for _, tok := range s.ProgressOrder {
		p := s.Progress[tok]
		if p.Begin != nil && strings.HasPrefix(p.Begin.Title, titlePrefix) {
			return p
		}
	}
	return nil
}

func reportMessages(p *lsptest.ProgressRecord) string {
	var b strings.Builder
	for _, r := range p.Reports {
		if r.Message != nil {
			b.WriteString(*r.Message + "\n---\n")
		}
	}
	return b.String()
}

// waitFor polls cond every millisecond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return cond()
}

// syncLog keeps the server log (and mirrors it to the test log).
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	return len(p), nil
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *syncLog) handler(t testing.TB) slog.Handler {
	return slog.NewTextHandler(io.MultiWriter(l, lsptest.LogWriter(t)), &slog.HandlerOptions{Level: slog.LevelDebug})
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readFileErr(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
