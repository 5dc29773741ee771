package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/lsp/wire"
	"github.com/agentls/agentls/workspace"
)

// ServerName is the name the server gives in its initialize result.
const ServerName = "agentls"

// ErrExitWithoutShutdown is returned by Serve when the connection ended
// (exit notification, end of input or cancellation) before a shutdown
// request: the process should exit with code 1.
var ErrExitWithoutShutdown = errors.New("connection ended without a shutdown request")

// CodeActionFunc computes the code actions for one textDocument/codeAction
// request. It must answer from memory: it runs while the editor waits.
type CodeActionFunc func(ctx context.Context, s *Server, params *protocol.CodeActionParams) ([]protocol.CommandOrCodeAction, error)

// HoverFunc answers textDocument/hover from memory: it runs while the
// editor waits. A nil Hover is "nothing here".
type HoverFunc func(ctx context.Context, s *Server, params *protocol.HoverParams) (*protocol.Hover, error)

// Option configures a Server built by New.
type Option func(*Server)

// WithVersion sets the version reported in the initialize result.
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// WithLogger sets the handler that server logs go to (stderr, log file),
// and the level variable that the configuration's logLevel sets. Records at
// or above the level are also mirrored to the client as window/logMessage.
func WithLogger(h slog.Handler, level *slog.LevelVar) Option {
	return func(s *Server) { s.baseLog, s.level = h, level }
}

// WithBuffers makes the server keep open documents in b instead of a
// store of its own.
func WithBuffers(b *workspace.Buffers) Option { return func(s *Server) { s.buffers = b } }

// WithCommands registers workspace/executeCommand commands, in addition to
// those registered earlier. Two handlers for one name make New panic: one
// name, one declaration.
func WithCommands(cmds ...CommandHandler) Option {
	return func(s *Server) {
		for _, c := range cmds {
			if err := s.commands.add(c); err != nil {
				panic("lsp: " + err.Error())
			}
		}
	}
}

// WithCodeActions sets the function that answers textDocument/codeAction.
// Without it the server offers no code actions.
func WithCodeActions(f CodeActionFunc) Option { return func(s *Server) { s.codeActions = f } }

// WithHover sets the function that answers textDocument/hover, and which
// clients are offered hover (offer sees the client's capabilities at
// initialize): a client not offered it gets no hoverProvider, and a hover
// request from it is MethodNotFound.
func WithHover(f HoverFunc, offer func(protocol.ClientCapabilities) bool) Option {
	return func(s *Server) { s.hover, s.offerHover = f, offer }
}

// WithDocumentHandler adds a function called on the read loop after the
// open-document store has applied a didOpen, didChange or didClose, with
// the document's file name and whether it is still open. It must not
// block.
func WithDocumentHandler(f func(name string, open bool)) Option {
	return func(s *Server) { s.onDocument = append(s.onDocument, f) }
}

// WithProgressCreateTimeout bounds the wait for the client's answer to
// window/workDoneProgress/create (default 1 s; some clients never answer).
func WithProgressCreateTimeout(d time.Duration) Option {
	return func(s *Server) { s.createTimeout = d }
}

// WithRootsHandler sets a function called, on the read loop, with the new
// workspace roots whenever they change (initialize,
// workspace/didChangeWorkspaceFolders). It must not block.
func WithRootsHandler(f func(roots []string)) Option { return func(s *Server) { s.onRoots = f } }

// WithEndHandler adds a function called once when Serve's connection has
// ended (every request context is cancelled by then), before Serve returns:
// the place to cancel background work and drain it.
func WithEndHandler(f func()) Option { return func(s *Server) { s.onEnd = append(s.onEnd, f) } }

// lifecycle is the state of the LSP session.
type lifecycle int32

const (
	stateNew         lifecycle = iota // before initialize
	stateInitialized                  // initialize answered
	stateShutdown                     // shutdown answered: only exit is accepted
)

// Server is one agentls language-server session: one connection to one
// editor, from initialize to exit. Build it with New and run it with Serve,
// once.
type Server struct {
	// Set by options before Serve; read-only afterwards.
	version       string
	baseLog       slog.Handler
	level         *slog.LevelVar
	buffers       *workspace.Buffers
	commands      *commandRegistry
	codeActions   CodeActionFunc
	hover         HoverFunc
	offerHover    func(protocol.ClientCapabilities) bool
	onDocument    []func(name string, open bool)
	createTimeout time.Duration
	onRoots       func([]string)
	onSettings    []SettingsHandler
	redactor      func() Redactor
	onEnd         []func()
	inline        inlineState // textDocument/inlineCompletion (inline.go)

	log      *slog.Logger // baseLog plus the client mirror
	mirror   *clientLogHandler
	routes   map[string]route
	progress *Tracker

	conn   jsonrpc2.Conn
	client protocol.Client

	state    atomic.Int32 // a lifecycle
	served   atomic.Bool
	exit     chan struct{} // closed by the exit notification
	exitOnce sync.Once

	mu         sync.Mutex // guards the fields below
	clientCaps protocol.ClientCapabilities
	clientName string
	roots      []string
	hovers     bool // hoverProvider was declared to this client

	docMu     sync.Mutex    // guards docChange
	docChange chan struct{} // closed and replaced after every document change

	inflightMu sync.Mutex                         // guards inflight
	inflight   map[jsonrpc2.ID]context.CancelFunc // requests running Async, by id
}

// New returns a server configured by opts.
func New(opts ...Option) *Server {
	s := &Server{
		version:       "dev",
		commands:      newCommandRegistry(),
		createTimeout: time.Second,
		exit:          make(chan struct{}),
		inflight:      map[jsonrpc2.ID]context.CancelFunc{},
		docChange:     make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	if s.level == nil {
		s.level = new(slog.LevelVar)
	}
	if s.baseLog == nil {
		s.baseLog = slog.DiscardHandler
	}
	if s.buffers == nil {
		s.buffers = workspace.NewBuffers()
	}
	s.mirror = newClientLogHandler(s.level)
	s.log = slog.New(redactHandler{teeHandler{s.baseLog, s.mirror}, s.Redact})
	s.progress = newTracker(s)
	s.routes = s.buildRoutes()
	return s
}

// Logger is the server's logger: records go to the log handler given with
// WithLogger and, at or above the configured level, to the client.
func (s *Server) Logger() *slog.Logger { return s.log }

// Buffers is the store of the documents the editor has open.
func (s *Server) Buffers() *workspace.Buffers { return s.buffers }

// Progress is the server's work-done progress tracker.
func (s *Server) Progress() *Tracker { return s.progress }

// Client is the dispatcher for server-to-client calls. It is nil before
// Serve. Calls that wait for an answer (ApplyEdit, ShowMessageRequest, ...)
// must come from request handlers, never from notification handlers.
func (s *Server) Client() protocol.Client { return s.client }

// ClientCapabilities returns the capabilities the client declared in
// initialize (the zero value before).
func (s *Server) ClientCapabilities() protocol.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientCaps
}

// Redact hides secrets in text with the Redactor given by WithRedactor.
func (s *Server) Redact(text string) string {
	if text == "" || s.redactor == nil {
		return text
	}
	return s.redactor().String(text)
}

// Roots returns the workspace roots as absolute, cleaned OS paths, sorted.
func (s *Server) Roots() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.roots...)
}

// Serve runs the session over rwc until the exit notification, the end of
// input, or the cancellation of ctx, then closes rwc. It returns nil when a
// shutdown request came first, ErrExitWithoutShutdown otherwise. Serve may
// be called once.
func (s *Server) Serve(ctx context.Context, rwc io.ReadWriteCloser) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("lsp: Serve called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	readEnd := make(chan error, 1)
	st := wire.NewStream(rwc, s.log, func(err error) { readEnd <- err })
	s.conn = jsonrpc2.NewConn(st, jsonrpc2.WithCodec(wire.Codec{}))
	s.client = protocol.ClientDispatcher(s.conn)
	s.mirror.attach(ctx, s.client)
	s.conn.Go(ctx, s.handler())

	var why string
	select {
	case <-s.exit:
		why = "exit notification"
	case err := <-readEnd:
		why = "end of input"
		if !errors.Is(err, io.EOF) {
			why = fmt.Sprintf("read error: %v", err)
		}
	case <-ctx.Done():
		why = "cancelled"
	case <-s.conn.Done():
		why = "connection closed"
	}
	s.mirror.detach()
	s.log.Info("connection ending", "reason", why)
	cancel() // every request context, and every progress-tracked task, ends now

	// Close without waiting forever for a handler that ignores cancellation.
	closed := make(chan struct{})
	go func() {
		_ = rwc.Close()
		_ = s.conn.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(200 * time.Millisecond):
		// A read blocked on a stdin that cannot be interrupted, or a handler
		// that ignores cancellation: the process is about to exit anyway.
		s.baseLog.Handle(ctx, slog.NewRecord(time.Now(), slog.LevelDebug, "connection not closed within 200 ms", 0)) //nolint:errcheck
	}
	for _, f := range s.onEnd {
		f()
	}
	if lifecycle(s.state.Load()) != stateShutdown {
		return ErrExitWithoutShutdown
	}
	return nil
}

// route is how one LSP method is handled.
type route struct {
	notification bool
	// sync requests run on the read loop, in order with notifications:
	// initialize and shutdown, which change the lifecycle state.
	sync   bool
	handle func(ctx context.Context, params jsonrpc2.RawMessage) (any, error)
}

func invalidParams(method string, err error) error {
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params for %s: %v", method, err)
}

func decodeParams[P any](method string, raw jsonrpc2.RawMessage) (*P, error) {
	p := new(P)
	if len(raw) == 0 {
		return p, nil
	}
	if err := protocol.Unmarshal(raw, p); err != nil {
		return nil, invalidParams(method, err)
	}
	return p, nil
}

func request[P, R any](method string, fn func(context.Context, *P) (R, error)) route {
	return route{handle: func(ctx context.Context, raw jsonrpc2.RawMessage) (any, error) {
		p, err := decodeParams[P](method, raw)
		if err != nil {
			return nil, err
		}
		return fn(ctx, p)
	}}
}

func notification[P any](method string, fn func(context.Context, *P) error) route {
	return route{notification: true, handle: func(ctx context.Context, raw jsonrpc2.RawMessage) (any, error) {
		p, err := decodeParams[P](method, raw)
		if err != nil {
			return nil, err
		}
		return nil, fn(ctx, p)
	}}
}

func (s *Server) buildRoutes() map[string]route {
	init := s.initializeRoute()
	shutdown := route{sync: true, handle: func(ctx context.Context, _ jsonrpc2.RawMessage) (any, error) {
		return nil, s.shutdown(ctx)
	}}
	exit := route{notification: true, handle: func(context.Context, jsonrpc2.RawMessage) (any, error) {
		s.exitOnce.Do(func() { close(s.exit) })
		return nil, nil
	}}
	return map[string]route{
		protocol.MethodInitialize:                         init,
		protocol.MethodInitialized:                        notification(protocol.MethodInitialized, s.initialized),
		protocol.MethodShutdown:                           shutdown,
		protocol.MethodExit:                               exit,
		protocol.MethodSetTrace:                           notification(protocol.MethodSetTrace, func(context.Context, *protocol.SetTraceParams) error { return nil }),
		protocol.MethodTextDocumentDidOpen:                notification(protocol.MethodTextDocumentDidOpen, s.didOpen),
		protocol.MethodTextDocumentDidChange:              notification(protocol.MethodTextDocumentDidChange, s.didChange),
		protocol.MethodTextDocumentDidClose:               notification(protocol.MethodTextDocumentDidClose, s.didClose),
		protocol.MethodTextDocumentDidSave:                notification(protocol.MethodTextDocumentDidSave, s.didSave),
		protocol.MethodWorkspaceDidChangeConfiguration:    notification(protocol.MethodWorkspaceDidChangeConfiguration, s.didChangeConfiguration),
		protocol.MethodWorkspaceDidChangeWorkspaceFolders: notification(protocol.MethodWorkspaceDidChangeWorkspaceFolders, s.didChangeWorkspaceFolders),
		protocol.MethodWindowWorkDoneProgressCancel:       notification(protocol.MethodWindowWorkDoneProgressCancel, s.workDoneProgressCancel),
		protocol.MethodWorkspaceExecuteCommand:            request(protocol.MethodWorkspaceExecuteCommand, s.executeCommand),
		protocol.MethodTextDocumentCodeAction:             request(protocol.MethodTextDocumentCodeAction, s.codeAction),
		protocol.MethodTextDocumentHover:                  request(protocol.MethodTextDocumentHover, s.hoverRequest),
		MethodTextDocumentInlineCompletion:                request(MethodTextDocumentInlineCompletion, s.inlineCompletion),
	}
}

// handler is the connection's handler chain: $/cancelRequest on the read
// loop, then lifecycle gating, ordering, cancellation bookkeeping, panic
// recovery and error mapping in dispatch.
//
// jsonrpc2.CancelHandler is not used: it derives a context from every
// request's context, and jsonrpc2 recycles the context of a request that
// returns without Async while the goroutine context.WithCancel started
// still watches it (a data race). Here only requests that go Async, whose
// contexts are never recycled, get a derived context.
func (s *Server) handler() jsonrpc2.Handler {
	return func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method() != protocol.MethodCancelRequest {
			return s.dispatch(ctx, req)
		}
		var p protocol.CancelParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			s.log.Warn("malformed $/cancelRequest", "error", err)
			return nil, nil
		}
		switch id := p.ID.(type) {
		case protocol.Integer:
			s.cancelRequest(jsonrpc2.NewNumberID(int64(id)))
		case protocol.String:
			s.cancelRequest(jsonrpc2.NewStringID(string(id)))
		}
		if req.IsCall() {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "$/cancelRequest is a notification")
		}
		return nil, nil
	}
}

// cancelRequest cancels the context of the in-flight request id, if any.
func (s *Server) cancelRequest(id jsonrpc2.ID) {
	s.inflightMu.Lock()
	cancel, ok := s.inflight[id]
	s.inflightMu.Unlock()
	if ok {
		cancel()
	}
}

func (s *Server) dispatch(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	method := req.Method()
	isCall := req.IsCall()
	state := lifecycle(s.state.Load())
	switch {
	case method == protocol.MethodExit:
		// accepted in every state
	case state == stateNew && method != protocol.MethodInitialize:
		if isCall {
			return nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "%s before initialize", method)
		}
		s.log.Debug("notification before initialize dropped", "method", method)
		return nil, nil
	case state == stateShutdown:
		if isCall {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s after shutdown", method)
		}
		s.log.Debug("notification after shutdown dropped", "method", method)
		return nil, nil
	}
	r, known := s.routes[method]
	switch {
	case !known && isCall:
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method not found: %s", method)
	case !known:
		s.log.Debug("unknown notification ignored", "method", method)
		return nil, nil
	case r.notification && isCall:
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s is a notification, not a request", method)
	case !r.notification && !isCall:
		s.log.Warn("request sent as a notification ignored", "method", method)
		return nil, nil
	}
	if isCall && !r.sync {
		// Register the request for $/cancelRequest before releasing the read
		// loop (so a cancel right behind it finds it), then let it run
		// concurrently with later messages; Async clones the borrowed params.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		id := req.ID()
		s.inflightMu.Lock()
		s.inflight[id] = cancel
		s.inflightMu.Unlock()
		defer func() {
			s.inflightMu.Lock()
			delete(s.inflight, id)
			s.inflightMu.Unlock()
			cancel()
		}()
		jsonrpc2.Async(ctx)
	}
	start := time.Now()
	result, err := s.recovered(ctx, method, req.Params(), r)
	if !isCall {
		if err != nil {
			// Never returned: jsonrpc2 would end the connection.
			s.log.Error("notification failed", "method", method, "error", err)
		}
		return nil, nil
	}
	if err != nil {
		s.log.Debug("request failed", "method", method, "error", err, "duration", time.Since(start))
		return nil, wireError(ctx, err)
	}
	return result, nil
}

// recovered runs a route and turns a panic into an InternalError.
func (s *Server) recovered(ctx context.Context, method string, params jsonrpc2.RawMessage, r route) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in handler", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, err = nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "internal error in %s: %v", method, p)
		}
	}()
	return r.handle(ctx, params)
}

// wireError maps a handler error onto the JSON-RPC error sent to the client.
func wireError(ctx context.Context, err error) error {
	var werr *jsonrpc2.Error
	switch {
	case errors.As(err, &werr):
		if werr.Error() == err.Error() {
			return werr
		}
		return jsonrpc2.NewError(werr.Code, err.Error())
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return jsonrpc2.NewError(protocol.CodeRequestCancelled, "request cancelled")
	default:
		return jsonrpc2.NewError(jsonrpc2.InternalError, err.Error())
	}
}

// notify sends a notification to the client; failures are logged to the
// base handler only (never mirrored, which would loop).
func (s *Server) notify(ctx context.Context, send func(ctx context.Context, c protocol.Client) error) {
	c := s.client
	if c == nil {
		return
	}
	if err := send(context.WithoutCancel(ctx), c); err != nil {
		_ = s.baseLog.Handle(ctx, slog.NewRecord(time.Now(), slog.LevelWarn, "cannot notify client: "+err.Error(), 0))
	}
}

// Notify sends a notification that protocol.Client has no method for
// (agentls/answer); a failure is logged.
func (s *Server) Notify(ctx context.Context, method string, params any) {
	if s.conn == nil {
		return
	}
	if err := s.conn.Notify(context.WithoutCancel(ctx), method, params); err != nil {
		_ = s.baseLog.Handle(ctx, slog.NewRecord(time.Now(), slog.LevelWarn, "cannot notify client: "+err.Error(), 0))
	}
}

// ShowMessage sends window/showMessage.
func (s *Server) ShowMessage(ctx context.Context, typ protocol.MessageType, message string) {
	message = s.Redact(message)
	s.notify(ctx, func(ctx context.Context, c protocol.Client) error {
		return c.ShowMessage(ctx, &protocol.ShowMessageParams{Type: typ, Message: message})
	})
}

// docChanged wakes everyone waiting in DocumentChanged.
func (s *Server) docChanged() {
	s.docMu.Lock()
	close(s.docChange)
	s.docChange = make(chan struct{})
	s.docMu.Unlock()
}

// DocumentChanged returns a channel closed at the next didOpen, didChange
// or didClose (after the open-document store has applied it).
func (s *Server) DocumentChanged() <-chan struct{} {
	s.docMu.Lock()
	defer s.docMu.Unlock()
	return s.docChange
}

// PublishDiagnostics replaces the diagnostics the server shows for the
// file name (an empty list clears them). version, when not negative, is
// the document version they were computed for.
func (s *Server) PublishDiagnostics(ctx context.Context, name string, version int32, diags []protocol.Diagnostic) {
	if diags == nil {
		diags = []protocol.Diagnostic{}
	}
	p := &protocol.PublishDiagnosticsParams{URI: uri.File(name), Diagnostics: diags}
	if version >= 0 {
		p.Version = protocol.NewOptional(version)
	}
	s.notify(ctx, func(ctx context.Context, c protocol.Client) error { return c.PublishDiagnostics(ctx, p) })
}

// supportsShowDocument reports whether the client declared
// window.showDocument.
func (s *Server) SupportsShowDocument() bool {
	c := s.ClientCapabilities()
	return s.client != nil && c.Window != nil && c.Window.ShowDocument != nil && c.Window.ShowDocument.Support
}

// supportsApplyEdit reports whether the client declared workspace.applyEdit,
// and whether it takes versioned documentChanges.
func (s *Server) SupportsApplyEdit() (apply, documentChanges bool) {
	c := s.ClientCapabilities()
	if s.client == nil || c.Workspace == nil || c.Workspace.ApplyEdit == nil || !*c.Workspace.ApplyEdit {
		return false, false
	}
	we := c.Workspace.WorkspaceEdit
	return true, we != nil && we.DocumentChanges != nil && *we.DocumentChanges
}

// showDocument asks the client to show uri; it reports whether it did.
func (s *Server) ShowDocument(ctx context.Context, u uri.URI) bool {
	if !s.SupportsShowDocument() {
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

// The server-to-client calls the agent's adapters make. Each is a method of
// the server, so no adapter reaches into its connection.

// applyEdit sends workspace/applyEdit.
func (s *Server) ApplyEdit(ctx context.Context, p *protocol.ApplyWorkspaceEditParams) (*protocol.ApplyWorkspaceEditResult, error) {
	return s.client.ApplyEdit(ctx, p)
}

// showMessageRequest sends window/showMessageRequest.
func (s *Server) ShowMessageRequest(ctx context.Context, p *protocol.ShowMessageRequestParams) (*protocol.MessageActionItem, error) {
	return s.client.ShowMessageRequest(ctx, p)
}

// call sends an agentls request (agentls/saveDocuments, agentls/diagnostics)
// and decodes its result into result.
func (s *Server) Call(ctx context.Context, method string, params, result any) error {
	_, err := s.conn.Call(ctx, method, params, result)
	return err
}
