// Package acp is agentls's Agent Client Protocol face: an ACP agent over
// stdio (newline-delimited JSON-RPC) on the same session host as the LSP
// server and the command line. It turns session/prompt into Host.Start
// calls and implements a session.Port per turn that streams the task as
// session/update notifications, asks with session/request_permission and
// writes edits through the client's fs/write_text_file when offered.
package acp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/workspace"
)

// Session modes offered by session/set_mode.
const (
	ModeAsk  = "ask"
	ModeEdit = "edit"
	ModePlan = "plan"
)

// cancelGrace bounds how long a cancelled turn waits for its task to end
// before it answers "cancelled" anyway (the protocol wants the answer
// promptly; the task's last writes finish in the background).
const cancelGrace = 150 * time.Millisecond

// Options configure an Agent.
type Options struct {
	// Settings of every host (session.FromEnv in production).
	Settings session.Settings
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Logger receives the log (never stdout); nil discards it.
	Logger *slog.Logger
	// DBPath overrides the session database (tests); "" is the host's default.
	DBPath string
	// Version is reported in initialize.
	Version string
	// Logout forgets the key `agentls login` stored (agent/settings); nil
	// leaves logout unadvertised.
	Logout func() error
}

// Agent is the ACP agent of one connection. Hosts are per workspace root
// (the cwd of session/new or session/load); sessions are per ACP session.
type Agent struct {
	opts Options
	log  *slog.Logger
	// conn is set once, right after the connection is made; the SDK may
	// call the handlers before, so they reach it through peer(), which
	// waits for ready.
	conn  *sdk.AgentSideConnection
	ready chan struct{}
	// out is the connection's writer, for the replies of ext.go.
	out io.Writer
	// boolOptions: the client takes boolean config options
	// (clientCapabilities.session.configOptions.boolean).
	boolOptions atomic.Bool

	// redactor hides the secrets of opts.Settings in every update.
	redactor session.RedactorCache

	mu     sync.Mutex
	client sdk.ClientCapabilities
	// initSeen: an initialize request arrived (in the order of the
	// input); initDone is closed once it was handled. Session methods that
	// arrive before it are refused, those after it wait for it.
	initSeen atomic.Bool
	initDone chan struct{}
	initOnce sync.Once
	hosts    map[string]*session.Host // by root
	buffers  map[string]*workspace.Buffers
	sessions map[string]*acpSession
	closed   bool

	modelList modelList
	// startMu serialises the start of tasks: a host's settings are set to
	// the session's (model, effort) for the start of its task.
	startMu sync.Mutex
}

// acpSession is one ACP session: a conversation of follow-up tasks in one
// workspace.
type acpSession struct {
	id    string
	root  string
	extra []string // additional roots (additionalDirectories)
	host  *session.Host
	bufs  *workspace.Buffers

	mu         sync.Mutex
	mode       string
	model      string             // the model of this session's tasks; "" is the settings'
	effort     string             // the reasoning effort; "" is the model's default
	title      string             // the first line of the first prompt
	storeID    string             // the session store's ID, once a task ran ("" before)
	lastTask   string             // the last ended task: the next prompt follows it up
	lastPrompt string             // its prompt
	running    *session.Task      // the task of the turn in progress
	mcp        []mcp.ServerConfig // the MCP servers the client gave the session; set at creation or load
	cost       float64            // US dollars the session's priced model calls cost, in this process
	review     bool               // edits are reviewed before they apply (a boolean config option)
	noNetwork  bool               // commands get no network (a boolean config option)
}

var (
	_ sdk.Agent       = (*Agent)(nil)
	_ sdk.AgentLoader = (*Agent)(nil)
)

// New returns an agent not yet connected.
func New(opts Options) *Agent {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Agent{opts: opts, log: opts.Logger, ready: make(chan struct{}), hosts: map[string]*session.Host{},
		buffers: map[string]*workspace.Buffers{}, sessions: map[string]*acpSession{}, initDone: make(chan struct{})}
}

// Serve speaks ACP on r/w until the client disconnects or ctx ends, then
// cancels every task, kills their commands and drains the session stores.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts Options) error {
	a := New(opts)
	// The SDK starts reading in NewAgentSideConnection and has no way to take
	// a logger before that, while SetLogger is a plain field write. The input
	// stays closed until the logger is in place, so the reader never logs
	// through a half-set connection (an immediate EOF used to race here).
	logged := make(chan struct{})
	out := &lockedWriter{w: w, patch: patchOutgoing}
	a.out = out
	a.conn = sdk.NewAgentSideConnection(a, out, heldReader{r: filterLines(r, out, a.log, a.arrived), open: logged})
	a.conn.SetLogger(a.log)
	close(logged)
	close(a.ready)
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
	}
	a.Close()
	return nil
}

// heldReader reads nothing until open is closed.
type heldReader struct {
	r    io.Reader
	open <-chan struct{}
}

func (h heldReader) Read(p []byte) (int, error) {
	<-h.open
	return h.r.Read(p)
}

// Close ends every host: running tasks are cancelled and their writes drained.
func (a *Agent) Close() {
	a.mu.Lock()
	a.closed = true
	hosts := make([]*session.Host, 0, len(a.hosts))
	for _, h := range a.hosts {
		hosts = append(hosts, h)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(h.Close)
	}
	wg.Wait()
}

// host returns the host of a workspace root and its additional roots,
// making it on first use. Sessions with other additional roots get a host
// of their own (the same state folder and session store, those of root),
// so a root one session was given never widens another's.
func (a *Agent) host(root string, extra ...string) (*session.Host, *workspace.Buffers, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, nil, errors.New("agentls is shutting down")
	}
	key := strings.Join(append([]string{root}, extra...), "\x00")
	if h, ok := a.hosts[key]; ok {
		return h, a.buffers[key], nil
	}
	bufs := workspace.NewBuffers()
	bufs.SetClientReader(a.readClient)
	h := session.New(a.opts.Settings, session.Options{Getenv: a.opts.Getenv, Logger: a.log, Buffers: bufs, DBPath: a.opts.DBPath,
		LanguageServers: langserver.NewServers()})
	h.SetRoots(append([]string{root}, extra...))
	a.hosts[key], a.buffers[key] = h, bufs
	return h, bufs, nil
}

// extraRoots checks a session's additional roots: absolute directories,
// in the client's order, without duplicates or the session's own cwd.
func extraRoots(root string, dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		r, err := rootOf(d)
		if err != nil {
			return nil, err
		}
		if r != root && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (a *Agent) capabilities() sdk.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client
}

func (a *Agent) session(id sdk.SessionId) (*acpSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[string(id)]
	if !ok {
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q: create it with session/new or session/load", id)})
	}
	return s, nil
}

// peer is the connection to the client, once it is made.
func (a *Agent) peer() *sdk.AgentSideConnection {
	<-a.ready
	return a.conn
}

// update sends one session/update. Updates are sent on a context of their
// own: a cancelled turn still reports how its tool calls ended.
//
// Every update passes the redactor of the agent's settings first (the API
// key, the base URL's secrets, secret environment values, key shapes): the
// one place where what the model, a tool or a report wrote reaches the
// client's screen. File contents the client writes (fs/write_text_file) do
// not pass here: a file keeps its text.
func (a *Agent) update(id string, u sdk.SessionUpdate) {
	u, ok := a.redactUpdate(u)
	if !ok {
		a.log.Warn("session/update withheld: it could not be redacted", "session", id)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.peer().SessionUpdate(ctx, sdk.SessionNotification{SessionId: sdk.SessionId(id), Update: u}); err != nil {
		a.log.Debug("session/update not sent", "session", id, "error", err)
	}
}

// redactUpdate returns u with every secret hidden, through its JSON form;
// false when that form cannot be made (the update is then not sent).
func (a *Agent) redactUpdate(u sdk.SessionUpdate) (sdk.SessionUpdate, bool) {
	if c := u.UserMessageChunk; c != nil && isPlainImage(c.Content.Image) {
		// The user's own picture, replayed: data, not text (a key's shape
		// found in base64 would break the image and hide nothing).
		return u, true
	}
	b, err := json.Marshal(u)
	if err != nil {
		return u, false
	}
	red := a.redactor.Get(a.opts.Settings, a.opts.Getenv).JSON(b)
	if bytes.Equal(red, b) {
		return u, true
	}
	var out sdk.SessionUpdate
	if err := json.Unmarshal(red, &out); err != nil {
		return u, false
	}
	return out, true
}

// isPlainImage reports whether b is an image block of data and a media
// type agentls takes, nothing else (no URI, annotations or metadata).
func isPlainImage(b *sdk.ContentBlockImage) bool {
	return b != nil && imageTypes[b.MimeType] && b.Uri == nil && b.Annotations == nil && b.Meta == nil
}

// Initialize implements sdk.Agent with the capabilities agentls has: load,
// list, resume, close and delete of stored sessions, text, images and
// embedded text resources in prompts; no audio.
func (a *Agent) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.client = p.ClientCapabilities
	a.mu.Unlock()
	a.initSeen.Store(true) // a caller that bypasses the input filter (tests)
	a.initOnce.Do(func() { close(a.initDone) })
	a.log.Info("acp initialize", "clientProtocol", p.ProtocolVersion, "fsRead", p.ClientCapabilities.Fs.ReadTextFile,
		"fsWrite", p.ClientCapabilities.Fs.WriteTextFile, "terminal", p.ClientCapabilities.Terminal)
	title := "agentls"
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentInfo:       &sdk.Implementation{Name: "agentls", Title: &title, Version: a.opts.Version},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true, Image: true},
			SessionCapabilities: sdk.SessionCapabilities{List: &sdk.SessionListCapabilities{}, Resume: &sdk.SessionResumeCapabilities{},
				Close: &sdk.SessionCloseCapabilities{}, AdditionalDirectories: &sdk.SessionAdditionalDirectoriesCapabilities{}},
			McpCapabilities: sdk.McpCapabilities{Http: true, Sse: true},
			Auth:            a.authCapabilities(),
		},
		AuthMethods: a.authMethods(p.ClientCapabilities),
	}, nil
}

// Authenticate implements sdk.Agent: the API-key method succeeds when a
// key is there (the environment, or one stored by agentls login); any
// other method is unknown.
func (a *Agent) Authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	switch p.MethodId {
	case authEnv, authTerminal:
		if !a.haveKey() {
			return sdk.AuthenticateResponse{}, a.authError()
		}
		return sdk.AuthenticateResponse{}, nil
	}
	return sdk.AuthenticateResponse{}, &sdk.RequestError{Code: -32602, Message: fmt.Sprintf("unknown auth method %q: use %q", p.MethodId, authEnv)}
}

// arrived notes a message's method as it arrives, and handles the
// methods the SDK does not know (ext.go).
func (a *Agent) arrived(method string, id json.RawMessage, line []byte) bool {
	if method == sdk.AgentMethodInitialize {
		a.initSeen.Store(true)
		a.noteClientCapabilities(line)
	}
	return a.intercept(method, id, line)
}

// checkInitialized refuses a session method that arrived before
// initialize, and lets one that arrived after it wait for its answer.
func (a *Agent) checkInitialized(ctx context.Context) error {
	if !a.initSeen.Load() {
		return &sdk.RequestError{Code: -32600, Message: "initialize first: the connection has not been initialized"}
	}
	select {
	case <-a.initDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rootOf checks a session's cwd: an absolute directory.
func rootOf(cwd string) (string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return "", sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd must be an absolute path, got %q", cwd)})
	}
	root := filepath.Clean(cwd)
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return "", sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not a directory", cwd)})
	}
	return root, nil
}

func newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "acp-" + hex.EncodeToString(b[:])
}

func modeState(current string) *sdk.SessionModeState {
	ask := "Answer questions; read and search only"
	edit := "Change files and run commands, asking permission as configured"
	plan := "Explore read-only and end with a plan; nothing is written and no command runs. Switch to Edit and say \"go ahead\" to execute it"
	return &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(current), AvailableModes: []sdk.SessionMode{
		{Id: ModeAsk, Name: "Ask", Description: &ask},
		{Id: ModeEdit, Name: "Edit", Description: &edit},
		{Id: ModePlan, Name: "Plan", Description: &plan},
	}}
}

// NewSession implements sdk.Agent: cwd becomes the host's root. The
// client's MCP servers give the session's tasks their tools (acp/mcp.go).
func (a *Agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if err := a.checkInitialized(ctx); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	root, err := rootOf(p.Cwd)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	extra, err := extraRoots(root, p.AdditionalDirectories)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	h, bufs, err := a.host(root, extra...)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	servers, notes := mcpServers(p.McpServers)
	if len(notes) > 0 {
		a.log.Warn("MCP servers offered by the client not used", "why", notes)
	}
	s := &acpSession{id: newSessionID(), root: root, extra: extra, host: h, bufs: bufs, mode: ModeEdit, mcp: servers}
	// The client's MCP servers start now, in the background: a first start
	// (npx downloading) is not paid by the first turn.
	go h.StartMCP(context.WithoutCancel(ctx), servers)
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	a.save(ctx, s)
	a.log.Info("acp session new", "session", s.id, "root", root)
	a.announce(s, false)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.id), Modes: modeState(ModeEdit), ConfigOptions: a.configOptions(ctx, s), Meta: mcpNote(servers, notes)}, nil
}

// slashCommands are the commands the face answers itself.
var slashCommands = []sdk.AvailableCommand{
	{Name: "undo", Description: "Revert every edit of the last task of this session"},
	{Name: "report", Description: "Show the report of the last task of this session"},
	{Name: "tasks", Description: "List the tasks of this workspace (from the editor faces and the command line too)"},
}

// SetSessionMode implements sdk.Agent: the mode applies from the next prompt.
func (a *Agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	if err := a.setMode(s, string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	a.update(s.id, sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: a.configOptions(ctx, s)}})
	a.save(context.WithoutCancel(ctx), s)
	return sdk.SetSessionModeResponse{}, nil
}

// Cancel implements sdk.Agent. The SDK has already cancelled the turn's
// request context (which the task derives from); cancelling the task here
// too covers a task that outlived its request.
func (a *Agent) Cancel(_ context.Context, p sdk.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return nil // a notification: nothing to answer
	}
	s.mu.Lock()
	t := s.running
	s.mu.Unlock()
	if t != nil {
		_, _ = s.host.Cancel(t.ID())
	}
	return nil
}

// CloseSession implements sdk.Agent: the running task is cancelled and the
// session forgotten (its tasks stay in the store).
func (a *Agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	_ = a.Cancel(ctx, sdk.CancelNotification{SessionId: p.SessionId})
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if s != nil {
		a.forgetIfEmpty(ctx, s)
	}
	return sdk.CloseSessionResponse{}, nil
}

// Prompt implements sdk.Agent: one turn is one task of the host, a
// follow-up of the session's previous task. Slash commands are answered by
// the face.
func (a *Agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	if n := promptSize(p.Prompt); n > maxPromptBytes {
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32602, Message: fmt.Sprintf(
			"prompt too large: %d KiB, over the %d KiB limit; attach big files as resource links (agentls reads them) instead of pasting them", n>>10, maxPromptBytes>>10)}
	}
	if n := imageSize(p.Prompt); n > maxImageBytes {
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32602, Message: fmt.Sprintf(
			"images too large: %d KiB of image data, over the %d MiB limit; send smaller or fewer images", n>>10, maxImageBytes>>20)}
	}
	in, err := readPrompt(p.Prompt, s.root)
	if err != nil {
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32602, Message: err.Error()}
	}
	if in.Text == "" {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "empty prompt"})
	}
	if len(in.Images) > 0 {
		a.log.Info("acp prompt with images", "session", s.id, "images", describeImages(in.Images))
	}
	if f := strings.Fields(strings.TrimPrefix(in.Text, "/")); strings.HasPrefix(in.Text, "/") && len(f) > 0 {
		if reply, handled := a.slash(ctx, s, f[0]); handled {
			a.update(s.id, sdk.UpdateAgentMessageText(reply))
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
		}
	}
	a.syncBuffers(s, in)
	ctx = withClientReads(ctx, s.id, false)

	// A turn answered "cancelled" before its task ended: the follow-up
	// waits for that task's end (a follow-up needs an ended task).
	s.mu.Lock()
	last := s.lastTask
	s.mu.Unlock()
	if lt := s.host.Task(last); lt != nil {
		select {
		case <-lt.Done():
		case <-ctx.Done():
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
	}

	settings := a.taskSettings(ctx, s)
	s.mu.Lock()
	if s.running != nil {
		s.mu.Unlock()
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "a turn is already running in this session; cancel it first"})
	}
	kind := agent.KindEdit
	switch s.mode {
	case ModeAsk:
		kind = agent.KindAsk
	case ModePlan:
		kind = agent.KindPlan
	}
	spec := agent.TaskSpec{Kind: kind, Prompt: in.Text, Context: in.Context, FollowUp: s.lastTask, Images: in.Images}
	port := newTurnPort(a, s)
	a.startMu.Lock()
	s.host.SetSettings(settings)
	t, err := s.host.Start(ctx, spec, port)
	a.startMu.Unlock()
	if err != nil {
		s.mu.Unlock()
		return sdk.PromptResponse{}, a.startError(err)
	}
	s.running = t
	s.mu.Unlock()
	a.remember(ctx, s, t.SessionID())
	a.setTitle(ctx, s, in.Text)
	defer func() {
		s.mu.Lock()
		s.running = nil
		s.lastTask, s.lastPrompt = t.ID(), in.Text
		s.mu.Unlock()
	}()

	select {
	case <-t.Done():
	case <-ctx.Done():
		// Cancelled: the task's context derives from ctx. Answer within
		// the protocol's patience whether or not the task has ended.
		_, _ = s.host.Cancel(t.ID())
		select {
		case <-t.Done():
		case <-time.After(cancelGrace):
			a.log.Warn("cancelled task still ending", "task", t.ID())
		}
		port.closeCalls(sdk.ToolCallStatusFailed)
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	res := t.Result()
	port.finish(res)
	return sdk.PromptResponse{StopReason: stopReason(res)}, nil
}

// syncBuffers puts the text the client embedded in the prompt into the
// host's buffers, which the tools read before the disk, when the client
// writes files (so agentls's edits of them go through the editor) but does
// not answer reads: a client that answers fs/read_text_file is asked at
// each read instead (clientfs.go), so nothing is held ahead of time.
func (a *Agent) syncBuffers(s *acpSession, in promptInput) {
	caps := a.capabilities().Fs
	if !caps.WriteTextFile || caps.ReadTextFile {
		return
	}
	for f, text := range in.Embedded {
		if _, ok := absPath(s.root, f); !ok {
			continue
		}
		if doc, held := s.bufs.Get(f); held {
			if doc.Text != text {
				s.bufs.Open(f, doc.LanguageID, doc.Version+1, text)
			}
			continue
		}
		s.bufs.Open(f, "", 1, text)
	}
}

// slash answers /undo, /report and /tasks; handled is false for any other
// text that starts with a slash (it goes to the agent as a prompt).
func (a *Agent) slash(ctx context.Context, s *acpSession, name string) (reply string, handled bool) {
	s.mu.Lock()
	last := s.lastTask
	s.mu.Unlock()
	switch name {
	case "undo":
		return a.undo(ctx, s), true
	case "report":
		if last == "" {
			return "No report yet: no task has run in this session.", true
		}
		path := s.host.ReportIfWritten(ctx, last)
		if path == "" {
			return "Task " + last + " has no report.", true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "Report not read: " + err.Error(), true
		}
		return string(b), true
	case "tasks":
		list, err := s.host.List(ctx, session.Filter{Limit: 20})
		if err != nil {
			return "Tasks not listed: " + err.Error(), true
		}
		if len(list) == 0 {
			return "No tasks yet in this workspace.", true
		}
		var b strings.Builder
		for _, t := range list {
			fmt.Fprintf(&b, "- `%s` %s %s: %s\n", t.ID, t.Mode, t.State, session.FirstLine(t.Prompt, 80))
		}
		return b.String(), true
	}
	return a.extensionSlash(ctx, s, name)
}

// decision maps a permission option onto the host's decision.
func decision(option string) tools.Decision {
	switch option {
	case optAllowOnce:
		return tools.AllowOnce
	case optAllowAlways:
		return tools.AllowAlways
	case optRejectAlways:
		return tools.DenyAlways
	}
	return tools.Deny
}
