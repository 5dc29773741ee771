package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// ServiceOptions configure NewService. Zero fields mean their defaults.
type ServiceOptions struct {
	// ApprovalTimeout bounds the wait for the user's answer to an approval
	// question (window/showMessageRequest); no answer in time is a denial.
	// Default 2 minutes.
	ApprovalTimeout time.Duration
	// DrainTimeout bounds the wait, at server exit, for cancelled tasks to
	// end (their pending writes finish first). Default 5 s.
	DrainTimeout time.Duration
	// EchoTimeout bounds the wait for the didChange that echoes an applied
	// workspace/applyEdit. Default 2 s.
	EchoTimeout time.Duration
	// ApplyTimeout bounds the wait for the answer to workspace/applyEdit.
	// Default 10 s.
	ApplyTimeout time.Duration
}

// Service is the agent behind one server: it owns the workspace built from
// the server's roots, the session's runners, the model client (rebuilt
// when the model configuration changes), one command tracker and one grep
// index, and every task started through the editor. It registers the
// agentls.* commands and the code actions (Options).
//
// The exported hook fields are extension points for other layers (the
// session store, agentls.resume/undo); set them before Serve.
type Service struct {
	// ConfigureAgent, when set, is called with the agent configuration of
	// each new runner (one per workspace root and agent settings), to add
	// what other layers provide (a session store, a clarifier, ...).
	ConfigureAgent func(cfg *agent.Config, settings Config, ws *workspace.Workspace)
	// OnEvent, when set, sees every event of every task, in order, before
	// the progress sink.
	OnEvent func(taskID string, e agent.Event)
	// OnTaskEnd, when set, is called when a task has ended, with its result
	// and the absolute path of its report ("" when it was not written),
	// before the executeCommand reply.
	OnTaskEnd func(res *agent.Result, reportPath string)

	opts     ServiceOptions
	srv      *Server
	commands *tools.Commands

	syncMu sync.Mutex // serialises workspace (re)builds; guards ws, index, wsRoots
	ws     *workspace.Workspace
	index  *grep.Index
	// wsRoots are the roots ws was built or synced with.
	wsRoots []string

	mu       sync.Mutex // guards the fields below
	roots    []string   // the server's roots, as last announced
	runners  map[runnerKey]*agent.Runner
	client   *llm.Client
	clientOf string // modelKey of client
	tasks    map[string]*taskEntry
	order    []string // task IDs, oldest first
	closed   bool
	running  sync.WaitGroup // RunTask calls in flight

	sessions sessionStores // the session databases (sessions.go)

	// clientAnswered is set once the client answers an approval question;
	// clientMute once a client that never answered let one time out
	// (approve.go).
	clientAnswered, clientMute atomic.Bool
}

// NewService returns a service; pass its Options to New.
func NewService(opts ServiceOptions) *Service {
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = 2 * time.Minute
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	if opts.EchoTimeout <= 0 {
		opts.EchoTimeout = 2 * time.Second
	}
	if opts.ApplyTimeout <= 0 {
		opts.ApplyTimeout = 10 * time.Second
	}
	return &Service{
		opts:     opts,
		commands: tools.NewCommands(),
		runners:  map[runnerKey]*agent.Runner{},
		tasks:    map[string]*taskEntry{},
	}
}

// Options are the server options that plug the service in: the agentls.*
// commands, the code actions, the roots and configuration handlers and the
// end-of-connection handler (Close).
func (s *Service) Options() []Option {
	opts := []Option{
		func(srv *Server) { s.srv = srv },
		WithCommands(s.Commands()...),
		WithCodeActions(s.codeActions),
		WithRootsHandler(s.rootsChanged),
		WithEndHandler(s.Close),
	}
	return append(opts, s.sessionOptions()...)
}

// Server is the server the service is plugged into (nil before New).
func (s *Service) Server() *Server { return s.srv }

// CommandTracker is the tracker of every command the tasks run.
func (s *Service) CommandTracker() *tools.Commands { return s.commands }

// rootsChanged runs on the read loop: it must not block, so the workspace
// is (re)built in the background.
func (s *Service) rootsChanged(roots []string) {
	s.mu.Lock()
	s.roots = append([]string(nil), roots...)
	closed := s.closed
	s.mu.Unlock()
	if closed || len(roots) == 0 {
		return
	}
	go func() {
		if _, err := s.Workspace(context.Background()); err != nil {
			s.log().Warn("workspace not ready", "error", err)
		}
	}()
}

func (s *Service) log() *slog.Logger {
	if s.srv == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.srv.Logger()
}

// secrets are the values to keep out of everything agentls writes down
// (the session store, reports): the API key of the current configuration.
func (s *Service) secrets() []string {
	if s.srv == nil {
		return nil
	}
	return []string{s.srv.Config().APIKey(s.getenv)}
}

func (s *Service) getenv(name string) string {
	if s.srv != nil && s.srv.getenv != nil {
		return s.srv.getenv(name)
	}
	return os.Getenv(name)
}

// errNoWorkspace is returned when the editor gave no workspace folder.
var errNoWorkspace = errors.New("no workspace folder: open a folder (or a project) in the editor so agentls knows where to work")

// Workspace returns the workspace of the server's current roots, building
// it (or adding and removing roots) first when they changed. The first
// root is the primary one (it holds .agentls/).
func (s *Service) Workspace(ctx context.Context) (*workspace.Workspace, error) {
	s.mu.Lock()
	roots := append([]string(nil), s.roots...)
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errors.New("agentls is shutting down")
	}
	if len(roots) == 0 && s.srv != nil {
		roots = s.srv.Roots()
	}
	if len(roots) == 0 {
		return nil, errNoWorkspace
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.ws != nil && slices.Equal(s.wsRoots, roots) {
		return s.ws, nil
	}
	if s.ws == nil {
		ws, err := workspace.New(ctx, workspace.Options{
			Roots: roots, Buffers: s.srv.Buffers(), Watch: true, Logger: s.log(),
		})
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		s.ws, s.index, s.wsRoots = ws, grep.NewIndex(0), roots
		return ws, nil
	}
	for _, r := range s.wsRoots {
		if !slices.Contains(roots, r) {
			if err := s.ws.RemoveRoot(r); err != nil {
				s.log().Warn("remove workspace root", "root", r, "error", err)
			}
		}
	}
	for _, r := range roots {
		if !slices.Contains(s.wsRoots, r) {
			if err := s.ws.AddRoot(ctx, r); err != nil {
				return nil, fmt.Errorf("workspace: %w", err)
			}
		}
	}
	s.wsRoots = roots
	return s.ws, nil
}

// ModelConfig maps the configuration onto the model client's, with the API
// key read from the variable named by APIKeyEnv. The result holds the key:
// never log it other than through llm.Config's own redacting methods.
func (c Config) ModelConfig(getenv func(string) string) llm.Config {
	m := llm.Config{
		BaseURL:             c.BaseURL,
		APIKey:              c.APIKey(getenv),
		APIKeyEnv:           c.APIKeyEnv,
		Model:               c.Model,
		MaxCompletionTokens: c.MaxCompletionTokens,
		Temperature:         c.Temperature,
		ExtraBody:           c.ExtraBody,
	}
	if c.Azure != nil {
		m.Azure = true
		m.AzureAPIVersion = c.Azure.APIVersion
		m.AzureDeployment = c.Azure.Deployment
	}
	return m
}

// modelKey identifies a model configuration: a client is rebuilt when it
// changes. It holds a digest of the key, never the key.
func modelKey(m llm.Config) string {
	key := "none"
	if m.APIKey != "" {
		key = workspace.HashText(m.APIKey)[:16]
	}
	return fmt.Sprintf("%s|%s|%s|%s|%d|%v|%v|%t|%s|%s", m.BaseURL, m.Model, m.APIKeyEnv, key,
		m.MaxCompletionTokens, ptrVal(m.Temperature), m.ExtraBody, m.Azure, m.AzureAPIVersion, m.AzureDeployment)
}

func ptrVal(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// isLoopback reports whether baseURL names this machine (local model
// servers need no key).
func isLoopback(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// errNoAPIKey says how to give agentls the key.
func errNoAPIKey(env string) error {
	return fmt.Errorf("no API key: the environment variable %s is empty or unset. Set it in the environment the editor starts agentls from (e.g. export %s=sk-... before starting the editor), or set agentls.apiKeyEnv to the name of the variable that holds your key; a local model server (baseURL on localhost) needs none", env, env)
}

// modelClient returns the model client for the current configuration,
// building a new one when the configuration changed since the last task.
func (s *Service) modelClient(cfg Config) (*llm.Client, error) {
	m := cfg.ModelConfig(s.getenv)
	if m.APIKey == "" && !isLoopback(m.BaseURL) {
		return nil, errNoAPIKey(cfg.APIKeyEnv)
	}
	k := modelKey(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil && s.clientOf == k {
		return s.client, nil
	}
	opts := []llm.Option{llm.WithLogger(s.log())}
	c, err := llm.New(m, opts...)
	if err != nil {
		return nil, fmt.Errorf("model configuration: %w", err)
	}
	s.client, s.clientOf = c, k
	s.log().Info("model client ready", "config", c.Config())
	return c, nil
}

// runnerKey identifies the agent settings a runner was made with: a runner
// is one session, so a change of these settings starts a new one.
type runnerKey struct {
	ws           *workspace.Workspace
	root         string
	model        string
	maxTurns     int
	validate     string
	checkCommand string
	recordings   bool
}

// runnerFor returns the runner for the current settings (or the runner of
// the task a follow-up continues).
func (s *Service) runnerFor(ws *workspace.Workspace, cfg Config, followUp string) (*agent.Runner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if followUp != "" {
		if e, ok := s.tasks[followUp]; ok {
			return e.runner, nil
		}
		// A task of an earlier run: the runner finds it in the session
		// store (L17 across restarts) or reports it unknown.
	}
	root := ws.Roots()[0]
	k := runnerKey{ws: ws, root: root, model: cfg.Model, maxTurns: cfg.MaxTurns, validate: cfg.Validate, checkCommand: cfg.CheckCommand, recordings: cfg.Recordings}
	if r, ok := s.runners[k]; ok {
		return r, nil
	}
	acfg := agent.Config{
		Root:      root,
		ModelName: cfg.Model,
		MaxTurns:  cfg.MaxTurns,
		Validate:  agent.ValidateMode(cfg.Validate),
	}
	if cfg.CheckCommand != "" {
		acfg.Check = agent.ShellCheck{Dir: root, Command: cfg.CheckCommand, SecretEnv: []string{cfg.APIKeyEnv}}
	}
	s.configureSessions(&acfg, cfg, ws)
	if s.ConfigureAgent != nil {
		s.ConfigureAgent(&acfg, cfg, ws)
	}
	r := agent.NewRunner(acfg, taskModel{}, s.toolSet(ws))
	s.runners[k] = r
	return r, nil
}

// toolSet builds the tools of each task of a runner on ws: edits through
// the editor (workspace/applyEdit) or the disk, approvals through the
// editor, the shared grep index and command tracker.
func (s *Service) toolSet(ws *workspace.Workspace) agent.ToolSet {
	return func(g *agent.Guard) []tools.Tool {
		s.syncMu.Lock()
		idx := s.index
		s.syncMu.Unlock()
		cfg := s.srv.Config()
		reg := tools.New(tools.Env{
			Workspace: ws,
			Editor:    g.Editor(ws, &Editor{svc: s, ws: ws}),
			Approver:  tools.NewTaskApprovals(g.Approver(&Approver{svc: s, ws: ws})),
			Index:     idx,
			Commands:  s.commands,
			SecretEnv: []string{cfg.APIKeyEnv},
		})
		g.OnDone(func() { _ = reg.Close() })
		out := reg.Tools()
		for i, t := range out {
			out[i] = observedTool{t}
		}
		return out
	}
}

// taskModel is the runners' model: each call goes to the client its task
// was started with (carried by the task's context), so a configuration
// change applies from the next task on and never midway through one.
type taskModel struct{}

func (taskModel) Complete(ctx context.Context, req llm.Request, onEvent func(llm.Event)) (*llm.Response, error) {
	e := entryOf(ctx)
	if e == nil || e.client == nil {
		return nil, errors.New("lsp: model call outside a task")
	}
	return e.client.Complete(ctx, req, onEvent)
}

// observedTool records what a task's commands did (for the report).
type observedTool struct{ tools.Tool }

func (t observedTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	res, err := t.Tool.Run(ctx, args)
	if co, ok := res.Data.(*tools.CommandOutput); ok && co != nil {
		if e := entryOf(ctx); e != nil {
			e.addCommand(*co)
		}
	}
	return res, err
}

// Close cancels every running task, kills every command process group,
// waits (at most DrainTimeout) for the tasks to end, so pending writes
// finish, and stops watching the workspace. The server calls it when its
// connection ends.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	var entries []*taskEntry
	for _, e := range s.tasks {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	for _, e := range entries {
		e.cancel()
	}
	s.commands.KillAll()
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		for _, e := range entries {
			<-e.task.Done()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(s.opts.DrainTimeout):
		s.log().Warn("tasks still running at exit", "after", s.opts.DrainTimeout)
	}
	s.syncMu.Lock()
	if s.ws != nil {
		_ = s.ws.Close()
	}
	s.syncMu.Unlock()
	s.closeSessions()
}

// supportsShowDocument reports whether the client declared
// window.showDocument.
func (s *Server) supportsShowDocument() bool {
	c := s.ClientCapabilities()
	return s.client != nil && c.Window != nil && c.Window.ShowDocument != nil && c.Window.ShowDocument.Support
}

// supportsApplyEdit reports whether the client declared workspace.applyEdit,
// and whether it takes versioned documentChanges.
func (s *Server) supportsApplyEdit() (apply, documentChanges bool) {
	c := s.ClientCapabilities()
	if s.client == nil || c.Workspace == nil || c.Workspace.ApplyEdit == nil || !*c.Workspace.ApplyEdit {
		return false, false
	}
	we := c.Workspace.WorkspaceEdit
	return true, we != nil && we.DocumentChanges != nil && *we.DocumentChanges
}

// showDocument asks the client to show uri; it reports whether it did.
func (s *Server) showDocument(ctx context.Context, u uri.URI) bool {
	if !s.supportsShowDocument() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	res, err := s.client.ShowDocument(ctx, &protocol.ShowDocumentParams{URI: u, TakeFocus: ptr(true)})
	if err != nil {
		s.log.Warn("window/showDocument failed", "uri", string(u), "error", err)
		return false
	}
	return res != nil && res.Success
}
