// Package session hosts the agent for one workspace: it owns the workspace
// and its search index, the session store, the model clients, the user's
// settings and the only registry of tasks, decides a task's mode, and
// writes each task's report and summary. The faces (the LSP server, the ACP
// agent, the command line) are thin: each turns its protocol into Start
// calls and implements a Port for every task.
package session

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentls/agentls/agent/permission"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/extensions"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// EnvSessionDB names a variable that overrides the session database's
// location (default: .agentls/agentls.db in the primary root).
const EnvSessionDB = "AGENTLS_SESSION_DB"

// Options configure a Host. Zero fields mean their defaults.
type Options struct {
	// Getenv reads the environment (the API key); nil means os.Getenv.
	Getenv func(string) string
	// Logger receives the host's log; nil discards it.
	Logger *slog.Logger
	// Buffers are the editor's open documents; nil means none (a face
	// without an editor).
	Buffers *workspace.Buffers
	// Watch keeps the file index current with a file watcher.
	Watch bool
	// DBPath is the session database; "" means $AGENTLS_SESSION_DB, else
	// .agentls/agentls.db in the primary root.
	DBPath string
	// DrainTimeout bounds the wait, in Close, for cancelled tasks to end
	// (their pending writes finish first). Default 5 s.
	DrainTimeout time.Duration
	// LanguageServers give tasks the language tools (definition,
	// references, rename_symbol, ...) and diagnostics where the editor
	// shares none; nil: no language tools. Closed by Close.
	LanguageServers LanguageServers
	// Notice tells the user, outside any task, about the user's own
	// programs: an MCP server starting in the background ("starting MCP
	// server github: npx may be downloading it"), or failing to (failed,
	// with the end of its stderr). Redacted; nil: the log only.
	Notice func(text string, failed bool)
	// User are the settings of the user's own sources (environment, user
	// settings file, agentls login, command line): the baseline that
	// settings from the client (initializationOptions,
	// didChangeConfiguration) may not widen, nor move the key away from,
	// without the user's yes. nil: the settings New is given are the
	// user's own.
	User *Settings
	// Endpoints remember the model endpoints the user confirmed, across
	// restarts; nil: a yes holds until the host closes.
	Endpoints EndpointMemory
	// WalkHook is the workspace's (workspace.Options.WalkHook): tests hold
	// the listing of the files midway with it.
	WalkHook func(dir string)
}

// EndpointMemory keeps the model endpoints (as endpointOf names them) the
// user confirmed may receive the API key.
type EndpointMemory interface {
	Confirmed(endpoint string) bool
	Confirm(endpoint string) error
}

// Host is the agent of one workspace: one value per editor connection or
// command-line run. Its methods are safe for concurrent use.
type Host struct {
	opts     Options
	log      *slog.Logger
	tasks    *agent.TaskRegistry // the only registry of tasks
	commands *tools.Commands     // every command the tasks run, killed at Close
	redactor RedactorCache
	git      gitBinary           // the git that reads a task's git state, resolved once
	servers  *extensions.Servers // the MCP servers of the tasks, stopped at Close
	prompts  *extensions.Prompts // the custom commands, cached for code actions

	syncMu  sync.Mutex // serialises workspace (re)builds; guards ws, index, wsRoots
	ws      *workspace.Workspace
	index   *grep.Index
	wsRoots []string // the roots ws was built or synced with

	mu       sync.Mutex // guards the fields below
	roots    []string
	settings Settings
	client   *llm.Client
	clientOf string // modelKey of client
	st       *store.Store
	stPath   string
	closed   bool
	running  sync.WaitGroup // tasks started and not yet finished
	checking sync.WaitGroup // the sandbox check at open (reportSandbox), which creates the user's cache folders
	// stopCheck ends the sandbox check's wait for the walk and a moment
	// with no search (Close).
	stopCheck context.CancelFunc
	// perm asks the user and keeps the answers (agent/permission): the
	// model endpoints the user consented to (the one of the user's own
	// settings, Options.User, from the start), the workspace .mcp.json
	// files answered, every task's remembered answers.
	perm *permission.Service
	// base are the user's own settings (Options.User, else those the host
	// was made with), or the last the user consented to: settings that
	// widen them need consent.
	base Settings
	// warnedWorkspaceAllow: the user was told that .agentls/settings.json's
	// allowCommands is ignored.
	warnedWorkspaceAllow bool
	// convs maps a task ID to its conversation (the first task's ID, or
	// a fresh one), which its follow-ups share: "reject always" answers
	// hold for it.
	convs map[string]string
	nconv int
	// sessionStarted: the SessionStart hooks ran (at the first task).
	sessionStarted atomic.Bool
	// agentTexts are the editor's buffers holding only agent edits, of
	// every task: saved before any task's command.
	agentTexts agentTexts
}

// New returns a host with the given settings and no roots yet.
func New(settings Settings, opts Options) *Host {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	base := settings
	if opts.User != nil {
		base = *opts.User
	}
	h := &Host{opts: opts, log: opts.Logger, tasks: agent.NewTaskRegistry(), commands: tools.NewCommands(), settings: settings,
		perm: newPermission(base, opts.Logger), base: base}
	h.servers = extensions.NewServers(extensions.ServerOptions{Permission: h.perm, Getenv: opts.Getenv, Logger: h.logger,
		Redact: func(text string) string { return h.Redactor().String(text) }})
	h.prompts = extensions.NewPrompts(h.logger)
	return h
}

// newPermission is the host's permission service: a store in the user's
// configuration folder whose session memory starts with the endpoint of
// the user's own settings.
func newPermission(settings Settings, log *slog.Logger) *permission.Service {
	p := permission.New(permission.NewStore(""))
	p.Warn = log.Warn
	_ = p.Store.Remember(permission.Session, "", permission.NSEndpoint, endpointOf(settings), true)
	return p
}

// Settings returns the current settings.
func (h *Host) Settings() Settings {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.settings
}

// SetSettings replaces the settings; they apply from the next task on,
// never midway through one. The settings New was given are the user's
// start-up configuration; a change that widens them (approval,
// allowCommands, checkCommand, sandbox, ...) or sends the key to another
// model endpoint applies only once the user consents (confirmSettings).
func (h *Host) SetSettings(s Settings) {
	h.mu.Lock()
	h.settings = s
	h.mu.Unlock()
}

// SetLogger replaces the host's logger (a face whose log sink exists only
// once it is connected).
func (h *Host) SetLogger(l *slog.Logger) {
	if l != nil {
		h.mu.Lock()
		h.log = l
		h.mu.Unlock()
	}
}

func (h *Host) logger() *slog.Logger {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log
}

// Secrets are the values agentls must never write down or show: the API
// key of the current settings.
func (h *Host) Secrets() []string { return h.Redactor().Secrets() }

// Redactor hides the Secrets of the current settings; every sink of the
// host (store, reports) and of its faces passes text through it.
func (h *Host) Redactor() redact.Redactor { return h.redactor.Get(h.Settings(), h.opts.Getenv) }

// Commands tracks every command the host's tasks run.
func (h *Host) Commands() *tools.Commands { return h.commands }

// SetRoots sets the workspace folders; the first is the primary one (it
// holds .agentls/). The workspace follows at its next use.
func (h *Host) SetRoots(roots []string) {
	h.mu.Lock()
	h.roots = append([]string(nil), roots...)
	h.mu.Unlock()
}

// ErrNoWorkspace is returned when the face gave no workspace folder.
var ErrNoWorkspace = errors.New("no workspace folder: open a folder (or a project) in the editor so agentls knows where to work")

// errClosed is returned once Close has begun.
var errClosed = errors.New("agentls is shutting down")

// Workspace returns the workspace of the current roots, building it (or
// adding and removing roots) first when they changed.
func (h *Host) Workspace(ctx context.Context) (*workspace.Workspace, error) {
	h.mu.Lock()
	roots := append([]string(nil), h.roots...)
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if len(roots) == 0 {
		return nil, ErrNoWorkspace
	}
	h.syncMu.Lock()
	defer h.syncMu.Unlock()
	if h.ws != nil && slices.Equal(h.wsRoots, roots) {
		return h.ws, nil
	}
	if h.ws == nil {
		// The files are listed in the background: a task's first model
		// call does not wait for the walk of a large tree, only the tools
		// that need the list do (and a whole-workspace grep searches the
		// files as the walk finds them).
		// Its folders are watched once the walk is over and no search
		// runs (watching 6,000 folders took up to a tenth of the CPU of a first
		// search that ran beside it).
		idx := grep.NewIndex(0)
		ws, err := workspace.New(ctx, workspace.Options{
			Roots: roots, Buffers: h.opts.Buffers, Watch: h.opts.Watch, Logger: h.logger(), ListInBackground: true, WalkHook: h.opts.WalkHook,
			HoldWatches: func(ctx context.Context) { betweenSearches(ctx, idx) },
		})
		if err != nil {
			idx.Close()
			return nil, fmt.Errorf("workspace: %w", err)
		}
		h.ws, h.index, h.wsRoots = ws, idx, roots
		// The search filter builds in the background once the walk is
		// over, shared by every task of the workspace; a search never
		// waits for it.
		// Not waited for at Close: Close stops the walk and the build.
		go func(idx *grep.Index) {
			// Its file list (55,000 names checked and copied) is made
			// once the walk is over and no search runs: the first search
			// of a task started as the workspace opened does not share
			// the CPU with it.
			ws.FilesVersion()
			if !idx.BetweenSearches() {
				return
			}
			began := time.Now()
			if err := tools.StartGrepFilter(ws, idx); err != nil {
				h.logger().Warn("search filter not started", "error", err)
				return
			}
			h.reportFilter(idx, began)
		}(h.index)
		h.checking.Add(1)
		cctx, stop := context.WithCancel(context.Background())
		h.mu.Lock()
		h.stopCheck = stop
		h.mu.Unlock()
		go func() {
			defer h.checking.Done()
			// The probe starts a sandboxed process: it too waits for the
			// walk and a moment with no search.
			if ws.WaitListed(cctx) != nil {
				return
			}
			if betweenSearches(cctx, idx); cctx.Err() != nil {
				return
			}
			h.reportSandbox(ws.Roots())
		}()
		// The user's MCP servers start now, in the background: a first
		// start (npx downloading) is not paid by a task.
		h.startMCP(ws, h.Settings(), h.Settings().MCPServers)
		return ws, nil
	}
	for _, r := range h.wsRoots {
		if !slices.Contains(roots, r) {
			if err := h.ws.RemoveRoot(r); err != nil {
				h.logger().Warn("remove workspace root", "root", r, "error", err)
			}
		}
	}
	for _, r := range roots {
		if !slices.Contains(h.wsRoots, r) {
			if err := h.ws.AddRoot(ctx, r); err != nil {
				return nil, fmt.Errorf("workspace: %w", err)
			}
		}
	}
	h.wsRoots = roots
	return h.ws, nil
}

// reportFilter logs, once the search filter's build ends, what it holds
// and how long it took (benchmarks wait for this line).
func (h *Host) reportFilter(idx *grep.Index, began time.Time) {
	idx.Wait()
	if !idx.Warm() {
		return
	}
	files, bytes := idx.Stats()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.logger().Info("search filter built", "files", files, "MB", bytes>>20, "took", time.Since(began).Round(time.Millisecond),
		"heapMB", m.HeapInuse>>20, "goSysMB", m.Sys>>20)
}

// reportSandbox says once which sandbox commands run under; where the
// kernel offers none, commands fall back to approvals alone, and the user
// is told at warning level.
func (h *Host) reportSandbox(roots []string) {
	s := h.Settings()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, err := tools.SandboxStatus(ctx, tools.SandboxOptions{Mode: s.Sandbox, Network: s.CommandNetwork.All, Proxy: s.CommandNetwork.Proxy(h.logger()), Roots: roots})
	switch {
	case err != nil:
		h.logger().Warn("commands: the sandbox could not be checked", "error", err)
	case strings.HasPrefix(status, "none"):
		h.logger().Warn("commands run without a sandbox, under approvals alone", "sandbox", status)
	default:
		h.logger().Info("commands run in a sandbox", "sandbox", status)
	}
}

// DefaultDBPath is where the session database of a workspace whose primary
// root is root lives, unless Options.DBPath or EnvSessionDB say otherwise.
func DefaultDBPath(root string) string { return store.DefaultPath(root) }

// Store returns the session database of the workspace, opening it on first
// use.
func (h *Host) Store(ctx context.Context) (*store.Store, error) {
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	path := h.opts.DBPath
	if path == "" {
		path = h.opts.Getenv(EnvSessionDB)
	}
	if path == "" {
		// The default database lives in .agentls/: create that folder the
		// workspace's way (with its own .gitignore), so opening a folder
		// never leaves untracked files for git and Source Control. SQLite
		// opens it by name: the folder and the database's names are checked
		// for links first, and a refused folder means no database.
		state, err := ws.OpenState()
		if err != nil {
			return nil, fmt.Errorf("session store: %w", err)
		}
		state.Close()
		path = store.DefaultPath(ws.Roots()[0])
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	if h.st != nil && h.stPath == path {
		return h.st, nil
	}
	st, err := store.Open(ctx, path, store.Options{Secrets: h.Secrets})
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	if h.st != nil {
		old := h.st
		go func() { _ = old.Close(context.Background()) }()
	}
	h.st, h.stPath = st, path
	h.log.Info("session store open", "path", st.Path())
	return st, nil
}

// modelClient returns the model client of the settings, building a new one
// when the model configuration changed since the last task.
func (h *Host) modelClient(s Settings) (*llm.Client, error) {
	m := s.ModelConfig(h.opts.Getenv)
	if m.APIKey == "" && !IsLoopback(m.BaseURL) {
		return nil, &ErrNoAPIKey{Env: s.APIKeyEnv}
	}
	k := modelKey(m)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil && h.clientOf == k {
		return h.client, nil
	}
	c, err := llm.New(m, llm.WithLogger(h.log))
	if err != nil {
		return nil, fmt.Errorf("model configuration: %w", err)
	}
	h.client, h.clientOf = c, k
	h.log.Info("model client ready", "config", c.Config())
	return c, nil
}

// Close cancels every running task, kills every command process group,
// waits (at most Options.DrainTimeout) for the tasks to end so their
// pending writes finish, stops watching the workspace and drains and
// closes the session store.
func (h *Host) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	stopCheck := h.stopCheck
	h.mu.Unlock()
	live := h.tasks.Tasks()
	for _, t := range live {
		t.Cancel()
	}
	h.commands.KillAll()
	if stopCheck != nil {
		stopCheck()
	}
	defer h.servers.Close()
	done := make(chan struct{})
	go func() {
		h.running.Wait()
		h.checking.Wait()
		for _, t := range live {
			<-t.Done()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(h.opts.DrainTimeout):
		h.logger().Warn("tasks still running at exit", "after", h.opts.DrainTimeout)
	}
	if h.opts.LanguageServers != nil {
		_ = h.opts.LanguageServers.Close()
	}
	h.syncMu.Lock()
	if h.index != nil {
		_ = h.index.Close()
	}
	if h.ws != nil {
		_ = h.ws.Close()
	}
	h.syncMu.Unlock()
	h.mu.Lock()
	st := h.st
	h.st = nil
	h.mu.Unlock()
	if st != nil {
		ctx, cancel := context.WithTimeout(context.Background(), h.opts.DrainTimeout)
		if err := st.Close(ctx); err != nil {
			h.logger().Warn("session store close", "path", st.Path(), "error", err)
		}
		cancel()
	}
}

// betweenSearches waits for a moment when no search runs (or for idx to
// close), or until ctx ends.
func betweenSearches(ctx context.Context, idx *grep.Index) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		idx.BetweenSearches()
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
