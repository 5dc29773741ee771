// Package langserver is agentls's own LSP client: it starts the language
// servers of the workspace's languages (gopls, pyright, rust-analyzer, ...)
// through the one launcher (tools.Run: the commands' sandbox, with the
// workspace read-only and the caches writable), and gives the agent tools
// addressed by symbol (definition, references, hover, symbols,
// rename_symbol, implementations, callers) over either those servers or
// the editor's own (source 1, forwarded by the editor plugin).
//
// The connection is go.lsp.dev/jsonrpc2 with go.lsp.dev/protocol's codec
// and typed dispatcher (protocol.NewClient) for the lifecycle and the
// server's notifications. The feature requests go out by method name and
// their results are decoded into the package's small types (lsptypes.go):
// the same request is forwarded verbatim to the editor's servers, whose
// answer arrives as raw JSON, so one decoding serves both sources.
package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/lsp/wire"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// MaxMessage bounds one message a language server sends agentls (its
// Content-Length, checked before anything is allocated): a larger one is
// read through and discarded, and the request it answers fails with an
// error that says so (lsp/wire). A references answer of 8 MiB holds some
// 60,000 locations, far more than a tool shows.
const MaxMessage = 8 << 20

// Timeout bounds every exchange with a language server: its start
// (initialize), each request, and its shutdown. A server that takes longer
// is reported by name and the tool call goes on without it.
const Timeout = 10 * time.Second

// FirstTimeout bounds a server's first request of each method: it may wait
// for the server's load of the workspace (gopls lists the packages and
// type-checks them for the first request that needs types, 10 s and more on
// a cold cache or a busy machine; a documentSymbol before it is answered
// from the syntax at once), which a user's first rename must not fail on.
const FirstTimeout = 60 * time.Second

// Config is how one language's server is started.
type Config struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// InitializationOptions are sent as initialize's initializationOptions.
	InitializationOptions json.RawMessage `json:"initializationOptions,omitempty"`
}

// Name is the server's name for people: the command's base name.
func (c Config) Name() string { return filepath.Base(c.Command) }

// Error is a failure of a language server: it names the server, says what
// went wrong and what the agent can do instead.
type Error struct {
	Server string
	Op     string // "start", "textDocument/references", ...
	Err    error
	Stderr string // the tail of the server's standard error, if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("language server %s: %s: %v", e.Server, e.Op, e.Err)
	if t := strings.TrimSpace(e.Stderr); t != "" {
		s += " (stderr: " + t + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// client is one running language server for one set of roots.
type client struct {
	cfg    Config
	lang   string
	conn   jsonrpc2.Conn
	server protocol.Server
	stop   context.CancelFunc // kills the process (tools.Run's cancel path)
	exited chan struct{}      // closed when the process ended
	stderr *tools.Tail
	// syncMu orders the didOpen/didChange notifications of concurrent
	// syncs, so the server sees each document's versions in order.
	syncMu sync.Mutex

	mu       sync.Mutex // guards the fields below
	exitErr  error
	docs     map[uri.URI]doc
	diags    map[uri.URI]published
	diagWait chan struct{}   // closed and replaced at every publishDiagnostics
	lastUse  time.Time       // the end of the last request (its start while one runs)
	inflight int             // requests waiting for an answer: not idle
	caps     json.RawMessage // the server's capabilities from initialize
	answered map[string]bool // methods answered once: Timeout bounds the next
}

type doc struct {
	version int32
	text    string
}

type published struct {
	version int32
	diags   []Diagnostic
}

// rwc is the server's stdout and stdin as one stream.
type rwc struct {
	r *io.PipeReader
	w *os.File
}

func (p rwc) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p rwc) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p rwc) Close() error {
	err := p.w.Close()
	p.r.Close()
	return err
}

// startOptions are the launcher settings of a server.
type startOptions struct {
	Roots   []string
	Sandbox string // the commands' sandbox setting: "" (workspace-write) or "off"
}

// start starts cfg's program and initializes it with the roots as
// workspace folders, within Timeout.
func start(ctx context.Context, lang string, cfg Config, opts startOptions) (*client, error) {
	name := cfg.Name()
	fail := func(op string, err error, c *client) (*client, error) {
		e := &Error{Server: name, Op: op, Err: err}
		if c != nil {
			c.kill()
			e.Stderr = c.stderr.String()
		}
		return nil, e
	}
	if _, err := tools.LookPath(cfg.Command, opts.Roots); err != nil {
		return fail("start", fmt.Errorf("not installed: %w", err), nil)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return fail("start", err, nil)
	}
	outR, outW := io.Pipe()
	procCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c := &client{cfg: cfg, lang: lang, stop: stop, exited: make(chan struct{}), stderr: &tools.Tail{Max: 2048},
		docs: map[uri.URI]doc{}, diags: map[uri.URI]published{}, diagWait: make(chan struct{}), lastUse: time.Now()}
	started := make(chan error, 1)
	go func() {
		defer close(c.exited)
		res, err := tools.Run(procCtx, tools.RunSpec{
			Argv: append([]string{cfg.Command}, cfg.Args...), Dir: opts.Roots[0],
			Stdin: inR, Stdout: outW, Stderr: c.stderr,
			Sandbox: tools.SandboxOptions{Mode: opts.Sandbox, Roots: opts.Roots, RootsReadOnly: true},
		})
		inR.Close()
		if err == nil {
			err = fmt.Errorf("it exited (exit code %d%s)", res.ExitCode, signalNote(res.Signal))
		}
		started <- err
		c.mu.Lock()
		c.exitErr = err
		c.mu.Unlock()
		outW.CloseWithError(io.EOF)
	}()
	stream := wire.NewStream(rwc{r: outR, w: inW}, slog.New(slog.DiscardHandler), nil).SetMaxMessage(MaxMessage)
	_, conn, server := protocol.NewClient(context.WithoutCancel(ctx), &handler{c: c}, stream)
	c.conn, c.server = conn, server

	ictx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var folders []map[string]string
	for _, r := range opts.Roots {
		folders = append(folders, map[string]string{"uri": string(uri.File(r)), "name": filepath.Base(r)})
	}
	params := map[string]any{
		"processId":        os.Getpid(),
		"clientInfo":       map[string]string{"name": "agentls"},
		"rootUri":          string(uri.File(opts.Roots[0])),
		"workspaceFolders": folders,
		"capabilities":     clientCapabilities,
	}
	if len(cfg.InitializationOptions) > 0 {
		params["initializationOptions"] = cfg.InitializationOptions
	}
	var result struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := c.call(ictx, "initialize", params, &result); err != nil {
		select {
		case e := <-started:
			err = e
		default:
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within %s", Timeout)
			}
		}
		return fail("initialize", err, c)
	}
	c.caps = result.Capabilities
	if err := conn.Notify(ictx, "initialized", map[string]any{}); err != nil {
		return fail("initialized", err, c)
	}
	return c, nil
}

func signalNote(sig string) string {
	if sig == "" {
		return ""
	}
	return ", signal " + sig
}

// clientCapabilities are what agentls's client supports: plain text
// synchronisation, hierarchical document symbols, versioned workspace
// edits (documentChanges) and diagnostics with versions.
var clientCapabilities = map[string]any{
	"general": map[string]any{"positionEncodings": []string{"utf-16"}},
	"textDocument": map[string]any{
		"synchronization":    map[string]any{"didSave": false},
		"hover":              map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
		"definition":         map[string]any{"linkSupport": false},
		"implementation":     map[string]any{"linkSupport": false},
		"references":         map[string]any{},
		"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
		"rename":             map[string]any{"prepareSupport": false},
		"callHierarchy":      map[string]any{},
		"publishDiagnostics": map[string]any{"versionSupport": true},
	},
	"workspace": map[string]any{
		"workspaceFolders": true,
		"configuration":    true,
		"symbol":           map[string]any{},
		"workspaceEdit":    map[string]any{"documentChanges": true},
	},
}

// call sends one request and decodes its result into result, bounded by
// ctx and by the process's end.
func (c *client) call(ctx context.Context, method string, params, result any) error {
	var raw jsonrpc2.RawMessage
	errc := make(chan error, 1)
	go func() { errc <- protocol.Call(ctx, c.conn, method, params, &raw) }()
	select {
	case err := <-errc:
		if err != nil {
			return err
		}
	case <-c.exited:
		c.mu.Lock()
		err := c.exitErr
		c.mu.Unlock()
		return err
	}
	if result == nil || len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, result)
}

// Call sends method for a document the caller synced (sync) first.
func (c *client) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	c.lastUse = time.Now()
	c.inflight++
	limit := Timeout
	if !c.answered[method] {
		limit = FirstTimeout
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.lastUse = time.Now()
		c.inflight--
		c.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := c.call(ctx, method, params, result); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", limit)
		}
		return &Error{Server: c.cfg.Name(), Op: method, Err: err, Stderr: c.stderr.String()}
	}
	c.mu.Lock()
	if c.answered == nil {
		c.answered = map[string]bool{}
	}
	c.answered[method] = true
	c.mu.Unlock()
	return nil
}

// alive reports whether the process still runs.
func (c *client) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// sync opens the document at u with text, or sends its new text when it
// changed since, and returns the version the server has.
func (c *client) sync(ctx context.Context, u uri.URI, languageID, text string) (int32, error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	c.mu.Lock()
	d, open := c.docs[u]
	if open && d.text == text {
		c.mu.Unlock()
		return d.version, nil
	}
	d.version++
	d.text = text
	c.docs[u] = d
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var err error
	if !open {
		err = c.conn.Notify(ctx, "textDocument/didOpen", map[string]any{
			"textDocument": map[string]any{"uri": u, "languageId": languageID, "version": d.version, "text": text}})
	} else {
		err = c.conn.Notify(ctx, "textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": u, "version": d.version},
			"contentChanges": []map[string]any{{"text": text}}})
	}
	if err != nil {
		return 0, &Error{Server: c.cfg.Name(), Op: "didOpen", Err: err}
	}
	return d.version, nil
}

// diagnostics waits (bounded by ctx) for the server's diagnostics of u at
// version or later and returns the latest it published.
func (c *client) diagnostics(ctx context.Context, u uri.URI, version int32) ([]Diagnostic, int32, bool) {
	for {
		c.mu.Lock()
		p, ok := c.diags[u]
		wait := c.diagWait
		c.mu.Unlock()
		if ok && p.version >= version {
			return p.diags, p.version, true
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return p.diags, p.version, ok
		case <-c.exited:
			return nil, 0, false
		}
	}
}

// shutdown asks the server to exit, then kills what is left.
func (c *client) shutdown() { c.shutdownWithin(2 * time.Second) }

// shutdownWithin asks the server to shut down and exit, waiting at most
// grace for each step, then kills it. A server busy loading a workspace
// may not answer shutdown for seconds: the host's end (the command line's
// exit) gives it little time, an idle stop more.
func (c *client) shutdownWithin(grace time.Duration) {
	if c.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		if c.call(ctx, "shutdown", nil, nil) == nil {
			_ = c.conn.Notify(ctx, "exit", nil)
			select {
			case <-c.exited:
			case <-time.After(grace):
			}
		}
		cancel()
	}
	c.kill()
}

// kill ends the process (and its group) and the connection, and waits
// for the process to be gone.
func (c *client) kill() {
	c.stop()
	_ = c.conn.Close()
	<-c.exited
}

// handler answers the server's requests and notifications.
type handler struct{ c *client }

var _ protocol.Client = (*handler)(nil)

func (h *handler) PublishDiagnostics(_ context.Context, p *protocol.PublishDiagnosticsParams) error {
	ds := make([]Diagnostic, 0, len(p.Diagnostics))
	for _, d := range p.Diagnostics {
		x := Diagnostic{Range: workspace.Range{Start: workspace.Position{Line: d.Range.Start.Line, Character: d.Range.Start.Character}, End: workspace.Position{Line: d.Range.End.Line, Character: d.Range.End.Character}},
			Severity: int(d.Severity)}
		x.Source, _ = d.Source.Get()
		switch m := d.Message.(type) {
		case protocol.String:
			x.Message = string(m)
		case *protocol.MarkupContent:
			x.Message = m.Value
		}
		ds = append(ds, x)
	}
	v, _ := p.Version.Get()
	h.c.mu.Lock()
	h.c.diags[p.URI] = published{version: v, diags: ds}
	close(h.c.diagWait)
	h.c.diagWait = make(chan struct{})
	h.c.mu.Unlock()
	return nil
}

func (h *handler) Progress(context.Context, *protocol.ProgressParams) error { return nil }
func (h *handler) LogTrace(context.Context, *protocol.LogTraceParams) error { return nil }
func (h *handler) RegisterCapability(context.Context, *protocol.RegistrationParams) error {
	return nil
}
func (h *handler) UnregisterCapability(context.Context, *protocol.UnregistrationParams) error {
	return nil
}
func (h *handler) ShowMessage(context.Context, *protocol.ShowMessageParams) error { return nil }
func (h *handler) ShowMessageRequest(context.Context, *protocol.ShowMessageRequestParams) (*protocol.MessageActionItem, error) {
	return nil, nil
}
func (h *handler) LogMessage(context.Context, *protocol.LogMessageParams) error { return nil }
func (h *handler) ShowDocument(context.Context, *protocol.ShowDocumentParams) (*protocol.ShowDocumentResult, error) {
	return &protocol.ShowDocumentResult{Success: false}, nil
}
func (h *handler) WorkDoneProgressCreate(context.Context, *protocol.WorkDoneProgressCreateParams) error {
	return nil
}
func (h *handler) Telemetry(context.Context, protocol.LSPAny) error { return nil }
func (h *handler) Configuration(_ context.Context, p *protocol.ConfigurationParams) ([]protocol.LSPAny, error) {
	return make([]protocol.LSPAny, len(p.Items)), nil
}
func (h *handler) WorkspaceFolders(context.Context) ([]protocol.WorkspaceFolder, error) {
	return nil, nil
}

// ApplyEdit is refused: agentls's servers change files only through
// rename_symbol, which applies the edit itself through the editor.
func (h *handler) ApplyEdit(context.Context, *protocol.ApplyWorkspaceEditParams) (*protocol.ApplyWorkspaceEditResult, error) {
	return &protocol.ApplyWorkspaceEditResult{Applied: false}, nil
}
func (h *handler) CodeLensRefresh(context.Context) error       { return nil }
func (h *handler) FoldingRangeRefresh(context.Context) error   { return nil }
func (h *handler) SemanticTokensRefresh(context.Context) error { return nil }
func (h *handler) InlineValueRefresh(context.Context) error    { return nil }
func (h *handler) InlayHintRefresh(context.Context) error      { return nil }
func (h *handler) DiagnosticRefresh(context.Context) error     { return nil }
func (h *handler) TextDocumentContentRefresh(context.Context, *protocol.TextDocumentContentRefreshParams) error {
	return nil
}
