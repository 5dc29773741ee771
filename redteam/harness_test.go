package redteam

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	lspserver "github.com/agentls/agentls/lsp/server"
	"github.com/agentls/agentls/tools/sandbox"
)

// The families of attacks; every attempt names one.
const (
	famGit       = "git configuration"
	famFS        = "sandbox file system"
	famNet       = "network and sockets"
	famPrograms  = "programs on PATH and the server's own binary"
	famSettings  = "settings trust"
	famRender    = "rendering exfiltration"
	famExhaust   = "resource exhaustion"
	famSecrets   = "secrets by value"
	famApprovals = "always-allow prefixes"
	famEndpoint  = "endpoint follows the client"
)

// apiKey is the key every server of the suite runs with, in the process
// environment as a user's shell would have it: an attack escaped when it
// reaches anything outside the server.
const apiKey = "sk-redteam-KEY-7c1d0e93a5f04b2e"

// outcome is what one attempt found: escaped or held, and the evidence.
type outcome struct {
	escaped  bool
	evidence string
}

func held(format string, args ...any) outcome {
	return outcome{evidence: fmt.Sprintf(format, args...)}
}

func escaped(format string, args ...any) outcome {
	return outcome{escaped: true, evidence: fmt.Sprintf(format, args...)}
}

// tally counts attempts per family for the summary TestMain prints.
var tally = struct {
	sync.Mutex
	tries, escapes map[string]int
}{tries: map[string]int{}, escapes: map[string]int{}}

// attempt runs one attack of family as a subtest of t. The attack returns
// held or escaped; an escape fails the test with its evidence. An attack
// that cannot even be set up fails with t.Fatal (it is not counted as held).
func attempt(t *testing.T, family, name string, attack func(t *testing.T) outcome) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		o := attack(t)
		if t.Failed() {
			return
		}
		tally.Lock()
		tally.tries[family]++
		if o.escaped {
			tally.escapes[family]++
		}
		tally.Unlock()
		if o.escaped {
			t.Errorf("ESCAPED [%s] %s: %s", family, name, o.evidence)
			return
		}
		t.Logf("held [%s] %s: %s", family, name, o.evidence)
	})
}

func TestMain(m *testing.M) {
	sandbox.Main() // a test binary started as a command's supervisor is only that
	code := m.Run()
	tally.Lock()
	fams := make([]string, 0, len(tally.tries))
	for f := range tally.tries {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	total, esc := 0, 0
	for _, f := range fams {
		n, e := tally.tries[f], tally.escapes[f]
		total += n
		esc += e
		fmt.Printf("redteam: %-46s %3d tries, %3d held, %d escaped\n", f+":", n, n-e, e)
	}
	fmt.Printf("redteam: %-46s %3d tries, %3d held, %d escaped\n", "all families:", total, total-esc, esc)
	tally.Unlock()
	os.Exit(code)
}

// server is a real agentls LSP server (in this process, over pipes) on a
// temporary workspace, with a fake editor and a scripted model over HTTP.
type server struct {
	c     *lsptest.Client
	model *fakemodel.Server
	root  string
	logs  *syncLog
}

// serverOpts change what newServer starts.
type serverOpts struct {
	settings map[string]any    // the user's settings file, on top of the defaults
	client   map[string]any    // initializationOptions (the client's settings)
	userDir  string            // the user's agentls folder; "" a fresh one with settings
	cfg      lsptest.Config    // the fake editor (Roots and InitializationOptions are set here)
	links    map[string]string // symbolic links made in the workspace: name -> target
}

// newServer writes files into a fresh workspace, starts the scripted model
// with turns and an initialized server on that workspace. The API key is
// in the process environment (OPENAI_API_KEY), where a program the server
// starts unsandboxed would find it.
func newServer(t *testing.T, turns []fakemodel.Turn, files map[string]string, o serverOpts) *server {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", apiKey)
	root := t.TempDir()
	writeFiles(t, root, files)
	for name, target := range o.links {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
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
	cfg := o.cfg
	cfg.Roots = []string{root}
	cfg.InitializationOptions = o.client
	// The settings are the user's own (the user settings file); what an
	// attack sends as the client's settings comes on top.
	dir := o.userDir
	if dir == "" {
		dir = lsptest.UserSettingsDir(t, settings)
	}
	svc := lsp.NewService(lsp.ServiceOptions{Getenv: os.Getenv, UserDir: dir})
	logs := &syncLog{}
	srv := lspserver.New(append(svc.Options(),
		lspserver.WithVersion("redteam"),
		lspserver.WithLogger(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug}), nil),
	)...)
	c, _ := lsptest.Connect(t, srv, cfg)
	if _, err := c.Initialize(ctxFor(t)); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &server{c: c, model: model, root: root, logs: logs}
}

// path is the absolute path of a workspace file.
func (s *server) path(name string) string { return filepath.Join(s.root, filepath.FromSlash(name)) }

// run sends agentls.run and decodes the reply.
func (s *server) run(t *testing.T, args any) (lsp.RunReply, error) {
	t.Helper()
	return s.c.Run(t, ctxFor(t), args)
}

// fromServer is every message the server sent to the editor, as JSON lines.
func (s *server) fromServer() string {
	var b strings.Builder
	for _, line := range strings.Split(s.c.Transcript(), "\n") {
		if strings.Contains(line, " <- ") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// call is one scripted tool call.
func call(id, name, args string) fakemodel.ToolCall {
	return fakemodel.ToolCall{ID: id, Name: name, Arguments: fakemodel.Args(args)}
}

// writeFiles writes name -> text under root, making folders as needed.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ctxFor ends with a generous timeout, so a hung attack fails instead of
// hanging the suite.
func ctxFor(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

// marker is a file outside the workspace that an attack's payload writes
// when it runs; its existence (and what it holds) is the evidence.
func marker(t *testing.T) string {
	return filepath.Join(t.TempDir(), "payload-ran")
}

// ranPayload reports what the payload left at path, if it ran: "" when it
// did not.
func ranPayload(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) == 0 {
		return "(ran, wrote nothing)"
	}
	return string(b)
}

type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
