package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
)

// Servers are the session.LanguageServers of one host: agentls's own
// servers (a Pool), asked after the editor's when the face forwards.
type Servers struct{ pool *Pool }

var _ session.LanguageServers = (*Servers)(nil)

// NewServers returns a host's language servers; none runs before a tool
// asks.
func NewServers() *Servers { return &Servers{pool: NewPool(0)} }

// Pool is agentls's own servers.
func (s *Servers) Pool() *Pool { return s.pool }

func (s *Servers) configure(env session.LanguageEnv) {
	configs := map[string]Config{}
	for lang, c := range env.Settings.LanguageServers {
		configs[lang] = Config{Command: c.Command, Args: c.Args, InitializationOptions: c.InitializationOptions}
	}
	sandbox := env.Settings.Sandbox
	if sandbox != "off" {
		sandbox = ""
	}
	s.pool.Configure(env.Workspace.Roots(), configs, sandbox)
}

// Tools returns the language tools of a task: over the editor's servers
// first when the face forwards, with agentls's own behind; over agentls's
// own alone otherwise, and none when no server is available.
func (s *Servers) Tools(env session.LanguageEnv) []tools.Tool {
	s.configure(env)
	var src Source = s.pool
	forwards := false
	if env.Forward != nil {
		// An empty method asks only whether the face can forward.
		_, err := env.Forward(context.Background(), "", nil)
		forwards = !errors.Is(err, session.ErrUnsupported)
	}
	if forwards {
		fwd := env.Forward
		src = NewEditor(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			raw, err := fwd(ctx, method, params)
			if errors.Is(err, session.ErrUnsupported) {
				err = errors.Join(ErrForwardUnsupported, err)
			}
			return raw, err
		}, s.pool)
	} else if !s.pool.Available() {
		return nil
	}
	return Tools(Env{Workspace: env.Workspace, Editor: env.Editor, Approver: env.Approver, Source: src})
}

// diagnosticsWait bounds the wait for a server's diagnostics of new text.
const diagnosticsWait = 5 * time.Second

// Diagnostics gives each file's current text to its server and returns
// what it reports for that text; files of languages without a server (or
// whose server could not start or answer) are unchecked.
func (s *Servers) Diagnostics(ctx context.Context, env session.LanguageEnv, paths []string) ([]session.Diagnostic, []string, error) {
	s.configure(env)
	ws := env.Workspace
	var out []session.Diagnostic
	var unchecked []string
	for _, path := range paths {
		p, err := ws.Resolve(path)
		if err != nil {
			unchecked = append(unchecked, path)
			continue
		}
		f, err := ws.ReadFile(ctx, p)
		if err != nil {
			unchecked = append(unchecked, path)
			continue
		}
		ds, server, ok := s.pool.Diagnostics(ctx, ws.Abs(p), f.Text, diagnosticsWait)
		if !ok {
			unchecked = append(unchecked, path)
			continue
		}
		for _, d := range ds {
			src := d.Source
			if src == "" {
				src = server
			}
			sev := d.Severity
			if sev == 0 {
				sev = 1
			}
			out = append(out, session.Diagnostic{Path: p.String(), Line: int(d.Range.Start.Line) + 1, Severity: sev, Message: d.Message, Source: src})
		}
	}
	return out, unchecked, nil
}

// Close stops every server.
func (s *Servers) Close() error { return s.pool.Close() }
