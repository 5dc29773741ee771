// Package lsptest is a fake editor for tests of the agentls server. A Client
// connects to an server.Server in the same process (over net.Pipe) or to the
// agentls binary over its stdio, declares configurable capabilities, and
// records what the server sends: $/progress per token, window/showMessage,
// window/logMessage, window/showDocument, window/showMessageRequest and the
// workspace/applyEdit requests it applied to its own copies of the
// documents (with version checks). It fails the test on $/progress for a
// token it never created, prints the JSON-RPC transcript when the test
// fails, and waits on conditions (Await) instead of sleeping.
package lsptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/server"
	"github.com/agentls/agentls/lsp/wire"
)

// CreatePolicy is how the client answers window/workDoneProgress/create.
type CreatePolicy int

const (
	CreateAnswer CreatePolicy = iota // accept the token
	CreateIgnore                     // never answer (as ALE does)
	CreateFail                       // answer with an error
)

// Config is what the fake editor declares and how it behaves.
type Config struct {
	// WorkDoneProgress declares window.workDoneProgress.
	WorkDoneProgress bool
	// Create is how window/workDoneProgress/create is answered.
	Create CreatePolicy
	// SendWorkDoneToken makes ExecuteCommand pass a client-created token.
	SendWorkDoneToken bool
	// ApplyEdit declares workspace.applyEdit and documentChanges; without it
	// applyEdit requests are still answered (applied) but not declared.
	ApplyEdit bool
	// ChangeAnnotations declares workspace.workspaceEdit.changeAnnotationSupport
	// (with ApplyEdit): the client honours change annotations.
	ChangeAnnotations bool
	// Review decides, for each AnnotatedTextEdit whose annotation needs
	// confirmation, whether the user keeps it (VS Code's refactor preview
	// with a checkbox per change); nil keeps all. Kept edits are applied;
	// when none is kept the answer is applied: false (the user discarded
	// the preview), as VS Code answers.
	Review func(id protocol.ChangeAnnotationIdentifier, a protocol.ChangeAnnotation) bool
	// ShowDocument declares window.showDocument and answers success.
	ShowDocument bool
	// CodeActionLiterals declares codeActionLiteralSupport.
	CodeActionLiterals bool
	// HoverMarkdown declares textDocument.hover with markdown first in its
	// contentFormat (without it the client declares no hover format, so
	// hovers come as plain text).
	HoverMarkdown bool
	// ShowMessageRequest answers window/showMessageRequest; nil answers
	// null (the user dismissed the message).
	ShowMessageRequest func(protocol.ShowMessageRequestParams) *protocol.MessageActionItem
	// BeforeApplyEdit, when set, runs when a workspace/applyEdit request
	// arrives, before the client checks and applies it: a test can change
	// a document there (ChangeDocument) to make the edit stale.
	BeforeApplyEdit func(*protocol.ApplyWorkspaceEditParams)
	// SaveDocuments answers agentls/saveDocuments as the agentls plugins do:
	// each listed open document is written to disk and didSave is sent.
	// Without it the request gets MethodNotFound, as from a plain client.
	SaveDocuments bool
	// BeforeSave, when set, runs when agentls/saveDocuments arrives, before
	// the client saves: a test can hold the answer there (an editor whose
	// before-save hook waits on its own language server).
	BeforeSave func()
	// Diagnostics answers agentls/diagnostics as the agentls plugins do,
	// with what the editor's language servers would publish for each uri
	// given its current text and version; nil answers MethodNotFound.
	Diagnostics func(uri string, text string, version int32) []protocol.Diagnostic
	// DiagnosticsUnversioned answers agentls/diagnostics without versions,
	// as Emacs's and VS Code's plugins do (they cannot tell which text the
	// diagnostics are for).
	DiagnosticsUnversioned bool
	// DiagnosticsUnchecked, when set, says for a uri that no language server
	// of the editor checks it (the plugin's "checked": false).
	DiagnosticsUnchecked func(uri string) bool
	// LSP answers agentls/lsp as the agentls plugins do: it forwards the
	// request to the editor's own language servers and returns their
	// result (nil: null); nil answers MethodNotFound, as a plain client.
	LSP func(method string, params json.RawMessage) (json.RawMessage, error)
	// AnswerStream declares experimental.agentls.answerStream, so the
	// server streams the answer in agentls/answer notifications (recorded
	// in State.Answers, as are any sent without it).
	AnswerStream bool
	// InitializationOptions is sent in initialize (any JSON-encodable value).
	InitializationOptions any
	// Roots are the workspace folders (absolute paths) sent in initialize.
	Roots []string
	// Capabilities, when set, replaces the capabilities built from the
	// fields above.
	Capabilities *protocol.ClientCapabilities
	// Strict makes the client a generic LSP client that implements nothing
	// of agentls (Helix, Kakoune, Zed, Sublime): it declares only standard
	// capabilities (SaveDocuments, Diagnostics, LSP and AnswerStream must be
	// unset), and every message the server sends outside what it declared
	// fails the test (see strict.go): an agentls/* request or notification,
	// an unknown method, workspace/applyEdit without ApplyEdit,
	// window/showDocument without ShowDocument,
	// window/workDoneProgress/create or $/progress without
	// WorkDoneProgress (or a token the client gave).
	Strict bool
}

// ProgressRecord is what the client saw of one progress token.
type ProgressRecord struct {
	Token   string
	Begin   *protocol.WorkDoneProgressBegin
	Reports []protocol.WorkDoneProgressReport
	// ReportTimes are the arrival times of Reports.
	ReportTimes []time.Time
	End         *protocol.WorkDoneProgressEnd
}

// AnswerPart is one agentls/answer notification and when it came.
type AnswerPart struct {
	lsp.AnswerParams
	Time time.Time
}

// AnswerText is the concatenation of the streamed answer parts of a task.
func (s *State) AnswerText(taskID string) string {
	var b strings.Builder
	for _, a := range s.Answers {
		if a.TaskID == taskID {
			b.WriteString(a.Text)
		}
	}
	return b.String()
}

// Ended reports whether the progress has ended.
func (p *ProgressRecord) Ended() bool { return p != nil && p.End != nil }

// AppliedEdit is one workspace/applyEdit request and the client's answer.
type AppliedEdit struct {
	Params protocol.ApplyWorkspaceEditParams
	Result protocol.ApplyWorkspaceEditResult
}

// State is everything the client recorded. Await conditions read it.
type State struct {
	Progress      map[string]*ProgressRecord // by token ("agentls-1", or "#3" for an integer token)
	ProgressOrder []string                   // tokens in order of first sight
	ShowMessages  []protocol.ShowMessageParams
	LogMessages   []protocol.LogMessageParams
	ShowDocuments []protocol.ShowDocumentParams
	// Forwarded are the LSP methods of the agentls/lsp requests answered
	// (Config.LSP), in order.
	Forwarded       []string
	MessageRequests []protocol.ShowMessageRequestParams
	AppliedEdits    []AppliedEdit
	// Answers are the agentls/answer notifications, in order.
	Answers        []AnswerPart
	CreateRequests int        // window/workDoneProgress/create requests received
	SaveRequests   [][]string // the uris of each agentls/saveDocuments request
	// Loaded are the files the client opened from disk to apply a
	// workspace/applyEdit that edits them (they were not open).
	Loaded []string
	// Diagnostics are the last textDocument/publishDiagnostics per uri;
	// Publications counts them all.
	Diagnostics  map[string]protocol.PublishDiagnosticsParams
	Publications int
}

// HasShowMessage reports whether a window/showMessage contains substr.
func (s *State) HasShowMessage(substr string) bool {
	for _, m := range s.ShowMessages {
		if strings.Contains(m.Message, substr) {
			return true
		}
	}
	return false
}

// HasLogMessage reports whether a window/logMessage contains substr.
func (s *State) HasLogMessage(substr string) bool {
	for _, m := range s.LogMessages {
		if strings.Contains(m.Message, substr) {
			return true
		}
	}
	return false
}

type document struct {
	version int32
	text    string
}

// Client is a fake editor connected to one server.
type Client struct {
	t    testing.TB
	cfg  Config
	conn jsonrpc2.Conn

	closing   chan struct{} // closed by Close: ends handlers that never answer
	closeOnce sync.Once
	closers   []func() // run by Close, after the connection ends
	nextToken atomic.Int64

	mu            sync.Mutex    // guards the fields below
	changed       chan struct{} // closed and replaced whenever state changes
	state         State
	docs          map[string]*document // by absolute file name
	created       map[string]bool      // progress tokens created by or for this client
	violations    []string
	transcript    []string
	transcriptLen int
}

// maxTranscript bounds the transcript kept for failure reports.
const maxTranscript = 4 << 20

// Connect serves srv in-process over net.Pipe and returns a client
// connected to it, and a channel that receives Serve's result. The
// connection is closed when the test ends.
func Connect(t testing.TB, srv *server.Server, cfg Config) (*Client, <-chan error) {
	t.Helper()
	serverEnd, clientEnd := net.Pipe()
	serveDone := make(chan struct{})
	var serveErr error
	go func() {
		serveErr = srv.Serve(context.Background(), serverEnd)
		close(serveDone)
	}()
	c := newClient(t, cfg, clientEnd)
	c.closers = append(c.closers, func() {
		select {
		case <-serveDone:
		case <-time.After(5 * time.Second):
			c.t.Errorf("lsptest: server did not stop within 5 s of the connection closing")
		}
	})
	result := make(chan error, 1)
	go func() {
		<-serveDone
		result <- serveErr
	}()
	return c, result
}

// ConnectRW returns a client over an existing byte stream (for example the
// stdin and stdout of an agentls process).
func ConnectRW(t testing.TB, rwc io.ReadWriteCloser, cfg Config) *Client {
	t.Helper()
	return newClient(t, cfg, rwc)
}

func newClient(t testing.TB, cfg Config, rwc io.ReadWriteCloser) *Client {
	c := &Client{
		t:       t,
		cfg:     cfg,
		closing: make(chan struct{}),
		changed: make(chan struct{}),
		state:   State{Progress: map[string]*ProgressRecord{}},
		docs:    map[string]*document{},
		created: map[string]bool{},
	}
	if cfg.Strict && (cfg.SaveDocuments || cfg.Diagnostics != nil || cfg.LSP != nil || cfg.AnswerStream || cfg.Capabilities != nil) {
		t.Errorf("lsptest: a Strict client declares only standard capabilities: unset SaveDocuments, Diagnostics, LSP, AnswerStream and Capabilities")
	}
	c.conn = jsonrpc2.NewConn(&recordingStream{Stream: jsonrpc2.NewHeaderStream(rwc), c: c}, jsonrpc2.WithCodec(wire.Codec{}))
	c.conn.Go(context.Background(), c.handle)
	t.Cleanup(func() {
		c.Close()
		c.mu.Lock()
		violations := append([]string(nil), c.violations...)
		c.mu.Unlock()
		for _, v := range violations {
			t.Errorf("lsptest: %s", v)
		}
		if t.Failed() {
			t.Logf("JSON-RPC transcript:\n%s", c.Transcript())
		}
	})
	return c
}

// Close ends the connection; it is idempotent and also runs at test end.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		done := make(chan struct{})
		go func() { _ = c.conn.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			// A hang, not a slow close: a race-enabled run on a loaded
			// machine took more than 5 s to drain a 10x message.
			c.t.Errorf("lsptest: closing the connection took more than 30 s")
		}
		for _, f := range c.closers {
			f()
		}
	})
}

// Done is closed when the connection has ended (for example because the
// server exited).
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Capabilities returns the client capabilities sent in initialize.
func (c *Client) Capabilities() protocol.ClientCapabilities {
	if c.cfg.Capabilities != nil {
		return *c.cfg.Capabilities
	}
	caps := protocol.ClientCapabilities{
		Window: &protocol.WindowClientCapabilities{},
		Workspace: &protocol.WorkspaceClientCapabilities{
			WorkspaceFolders: ptr(true),
			Configuration:    ptr(false),
		},
		TextDocument: &protocol.TextDocumentClientCapabilities{
			Synchronization: &protocol.TextDocumentSyncClientCapabilities{DidSave: ptr(true)},
		},
	}
	if c.cfg.WorkDoneProgress {
		caps.Window.WorkDoneProgress = ptr(true)
	}
	if c.cfg.ShowDocument {
		caps.Window.ShowDocument = &protocol.ShowDocumentClientCapabilities{Support: true}
	}
	if c.cfg.ApplyEdit {
		caps.Workspace.ApplyEdit = ptr(true)
		caps.Workspace.WorkspaceEdit = &protocol.WorkspaceEditClientCapabilities{DocumentChanges: ptr(true)}
		if c.cfg.ChangeAnnotations {
			caps.Workspace.WorkspaceEdit.ChangeAnnotationSupport = &protocol.ChangeAnnotationsSupportOptions{GroupsOnLabel: ptr(true)}
		}
	}
	// The agentls plugins list the agentls/* requests they answer
	// (lsp.PluginCapabilities) and ask for the answer stream; a client
	// without them is sent none.
	var answers []string
	if c.cfg.SaveDocuments {
		answers = append(answers, lsp.MethodSaveDocuments)
	}
	if c.cfg.Diagnostics != nil {
		answers = append(answers, lsp.MethodDiagnostics)
	}
	if c.cfg.LSP != nil {
		answers = append(answers, lsp.MethodLSP)
	}
	if len(answers) > 0 || c.cfg.AnswerStream {
		caps.Experimental = protocol.LSPAny(lsp.PluginCapabilities(c.cfg.AnswerStream, answers...))
	}
	if c.cfg.HoverMarkdown {
		caps.TextDocument.Hover = &protocol.HoverClientCapabilities{ContentFormat: []protocol.MarkupKind{protocol.MarkupKindMarkdown, protocol.MarkupKindPlainText}}
	}
	if c.cfg.CodeActionLiterals {
		caps.TextDocument.CodeAction = &protocol.CodeActionClientCapabilities{
			CodeActionLiteralSupport: protocol.ClientCodeActionLiteralOptions{
				CodeActionKind: protocol.ClientCodeActionKindOptions{ValueSet: []protocol.CodeActionKind{protocol.CodeActionKindQuickFix, protocol.CodeActionKindRefactor}},
			},
		}
	}
	return caps
}

// Initialize sends initialize and then initialized.
func (c *Client) Initialize(ctx context.Context) (*protocol.InitializeResult, error) {
	p := &protocol.InitializeParams{
		ClientInfo:   protocol.ClientInfo{Name: "lsptest"},
		Capabilities: c.Capabilities(),
	}
	if len(c.cfg.Roots) > 0 {
		folders := make([]protocol.WorkspaceFolder, len(c.cfg.Roots))
		for i, r := range c.cfg.Roots {
			folders[i] = protocol.WorkspaceFolder{URI: FileURI(r), Name: filepath.Base(r)}
		}
		p.WorkspaceFolders = protocol.NewNullable(folders)
		root := FileURI(c.cfg.Roots[0])
		p.RootURI = &root
	}
	if c.cfg.InitializationOptions != nil {
		raw, err := json.Marshal(c.cfg.InitializationOptions)
		if err != nil {
			return nil, fmt.Errorf("encode initializationOptions: %w", err)
		}
		p.InitializationOptions = protocol.LSPAny(raw)
	}
	var res protocol.InitializeResult
	if err := c.Call(ctx, protocol.MethodInitialize, p, &res); err != nil {
		return nil, err
	}
	if err := c.Notify(ctx, protocol.MethodInitialized, &protocol.InitializedParams{}); err != nil {
		return nil, err
	}
	return &res, nil
}

// Call sends a request and decodes its result into result (which may be
// nil). When ctx ends first, $/cancelRequest is sent.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return protocol.Call(ctx, c.conn, method, params, result)
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// ExecuteCommand runs a command with one argument object (nil: none) and
// returns the raw result. With Config.SendWorkDoneToken it passes a token
// of its own, returned as the second result.
func (c *Client) ExecuteCommand(ctx context.Context, command string, arg any) (json.RawMessage, string, error) {
	p := &protocol.ExecuteCommandParams{Command: command}
	if arg != nil {
		raw, err := json.Marshal(arg)
		if err != nil {
			return nil, "", fmt.Errorf("encode argument: %w", err)
		}
		p.Arguments = []protocol.LSPAny{protocol.LSPAny(raw)}
	}
	var token string
	if c.cfg.SendWorkDoneToken {
		token = fmt.Sprintf("client-%d", c.nextToken.Add(1))
		c.mu.Lock()
		c.created[token] = true
		c.mu.Unlock()
		p.WorkDoneToken = protocol.String(token)
	}
	var res json.RawMessage
	err := c.Call(ctx, protocol.MethodWorkspaceExecuteCommand, p, &res)
	return res, token, err
}

// Run sends agentls.run with args and decodes the reply; a reply that is
// not a RunReply fails t at once. The error is the command's.
func (c *Client) Run(t testing.TB, ctx context.Context, args any) (lsp.RunReply, error) {
	t.Helper()
	raw, _, err := c.ExecuteCommand(ctx, lsp.CommandRun, args)
	var r lsp.RunReply
	if err == nil {
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("reply %s: %v", raw, err)
		}
	}
	return r, err
}

// Shutdown sends shutdown.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.Call(ctx, protocol.MethodShutdown, nil, nil)
}

// Exit sends exit.
func (c *Client) Exit(ctx context.Context) error {
	return c.Notify(ctx, protocol.MethodExit, nil)
}

// FileURI is the file URI of an absolute path.
func FileURI(path string) uri.URI { return uri.File(filepath.Clean(path)) }

// OpenDocument sends didOpen (version 1) and keeps a copy of the text.
func (c *Client) OpenDocument(ctx context.Context, filename, languageID, text string) error {
	c.mu.Lock()
	c.docs[filename] = &document{version: 1, text: text}
	c.mu.Unlock()
	return c.Notify(ctx, protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
		TextDocument: protocol.TextDocumentItem{URI: FileURI(filename), LanguageID: protocol.LanguageKind(languageID), Version: 1, Text: text},
	})
}

// Change is one successive edit of ChangeDocument: Range nil replaces the
// whole text.
type Change struct {
	Range *protocol.Range
	Text  string
}

// ChangeDocument applies changes, in order, to the client's copy (with the
// reference ApplyChange), bumps the version and sends them in one
// didChange. It returns the new text.
func (c *Client) ChangeDocument(ctx context.Context, filename string, changes ...Change) (string, error) {
	c.mu.Lock()
	doc, ok := c.docs[filename]
	if !ok {
		c.mu.Unlock()
		return "", fmt.Errorf("%s is not open", filename)
	}
	text := doc.text
	events := make([]protocol.TextDocumentContentChangeEvent, 0, len(changes))
	for i, ch := range changes {
		if ch.Range == nil {
			text = ch.Text
			events = append(events, &protocol.TextDocumentContentChangeWholeDocument{Text: ch.Text})
			continue
		}
		next, err := ApplyChange(text, *ch.Range, ch.Text)
		if err != nil {
			c.mu.Unlock()
			return "", fmt.Errorf("change %d: %w", i, err)
		}
		text = next
		events = append(events, &protocol.TextDocumentContentChangePartial{Range: *ch.Range, Text: ch.Text})
	}
	doc.text = text
	doc.version++
	version := doc.version
	c.mu.Unlock()
	return text, c.Notify(ctx, protocol.MethodTextDocumentDidChange, &protocol.DidChangeTextDocumentParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: FileURI(filename)}, Version: version},
		ContentChanges: events,
	})
}

// CloseDocument sends didClose and forgets the copy.
func (c *Client) CloseDocument(ctx context.Context, filename string) error {
	c.mu.Lock()
	delete(c.docs, filename)
	c.mu.Unlock()
	return c.Notify(ctx, protocol.MethodTextDocumentDidClose, &protocol.DidCloseTextDocumentParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: FileURI(filename)},
	})
}

// SaveDocument writes an open document's text to disk and sends didSave,
// as an editor's save does.
func (c *Client) SaveDocument(ctx context.Context, filename string) error {
	text, _, ok := c.Document(filename)
	if !ok {
		return fmt.Errorf("lsptest: %s is not open", filename)
	}
	if err := os.WriteFile(filename, []byte(text), 0o644); err != nil {
		return err
	}
	return c.Notify(ctx, protocol.MethodTextDocumentDidSave, &protocol.DidSaveTextDocumentParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(filename)}})
}

// Document returns the client's copy of an open document.
func (c *Client) Document(filename string) (text string, version int32, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.docs[filename]
	if !ok {
		return "", 0, false
	}
	return d.text, d.version, true
}

// Snapshot returns a copy of the recorded state.
func (c *Client) Snapshot() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.copyState()
}

func (c *Client) copyState() State {
	s := c.state
	s.Progress = make(map[string]*ProgressRecord, len(c.state.Progress))
	for k, v := range c.state.Progress {
		cp := *v
		cp.Reports = append([]protocol.WorkDoneProgressReport(nil), v.Reports...)
		cp.ReportTimes = append([]time.Time(nil), v.ReportTimes...)
		s.Progress[k] = &cp
	}
	s.ProgressOrder = append([]string(nil), c.state.ProgressOrder...)
	s.ShowMessages = append([]protocol.ShowMessageParams(nil), c.state.ShowMessages...)
	s.LogMessages = append([]protocol.LogMessageParams(nil), c.state.LogMessages...)
	s.ShowDocuments = append([]protocol.ShowDocumentParams(nil), c.state.ShowDocuments...)
	s.MessageRequests = append([]protocol.ShowMessageRequestParams(nil), c.state.MessageRequests...)
	s.AppliedEdits = append([]AppliedEdit(nil), c.state.AppliedEdits...)
	s.SaveRequests = append([][]string(nil), c.state.SaveRequests...)
	s.Loaded = append([]string(nil), c.state.Loaded...)
	s.Answers = append([]AnswerPart(nil), c.state.Answers...)
	s.Diagnostics = make(map[string]protocol.PublishDiagnosticsParams, len(c.state.Diagnostics))
	for k, v := range c.state.Diagnostics {
		v.Diagnostics = append([]protocol.Diagnostic(nil), v.Diagnostics...)
		s.Diagnostics[k] = v
	}
	return s
}

// Await waits until cond holds on the recorded state, checking after every
// change, and fails the test (t.Fatalf) when timeout passes first. It must
// be called from the test's goroutine.
func (c *Client) Await(timeout time.Duration, what string, cond func(*State) bool) State {
	c.t.Helper()
	s, err := c.AwaitErr(timeout, cond)
	if err != nil {
		c.t.Fatalf("lsptest: waiting for %s: %v", what, err)
	}
	return s
}

// AwaitErr is Await returning an error instead of failing the test.
func (c *Client) AwaitErr(timeout time.Duration, cond func(*State) bool) (State, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		s := c.copyState()
		changed := c.changed
		c.mu.Unlock()
		if cond(&s) {
			return s, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return s, fmt.Errorf("timed out after %v", timeout)
		case <-c.conn.Done():
			c.mu.Lock()
			s := c.copyState()
			c.mu.Unlock()
			if cond(&s) {
				return s, nil
			}
			return s, errors.New("connection closed")
		}
	}
}

// update changes the state under c.mu and wakes Await.
func (c *Client) update(f func(s *State)) {
	c.mu.Lock()
	f(&c.state)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *Client) violation(format string, args ...any) {
	c.mu.Lock()
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// Transcript returns the JSON-RPC messages exchanged so far, one a line.
func (c *Client) Transcript() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.transcript, "\n")
}

func (c *Client) record(dir string, msg jsonrpc2.Message) {
	if r, ok := msg.(*jsonrpc2.Response); ok && len(r.Result()) > 1<<20 {
		// A flood (a test of the bounds): named, not encoded again.
		c.mu.Lock()
		c.transcript = append(c.transcript, fmt.Sprintf("%s %s {\"id\":%v,\"result\":(%d bytes)}", time.Now().Format("15:04:05.000"), dir, r.ID(), len(r.Result())))
		c.mu.Unlock()
		return
	}
	raw, err := jsonrpc2.EncodeMessage(msg)
	line := fmt.Sprintf("%s %s %s", time.Now().Format("15:04:05.000"), dir, raw)
	if err != nil {
		line = fmt.Sprintf("%s %s (unencodable: %v)", time.Now().Format("15:04:05.000"), dir, err)
	}
	if len(line) > 2000 {
		line = line[:2000] + fmt.Sprintf("... (%d bytes)", len(line))
	}
	c.mu.Lock()
	if c.transcriptLen < maxTranscript {
		c.transcript = append(c.transcript, line)
		c.transcriptLen += len(line)
	}
	c.mu.Unlock()
}

// RecordNote adds a line to the transcript (for example a raw frame a test
// wrote itself).
func (c *Client) RecordNote(note string) {
	c.mu.Lock()
	c.transcript = append(c.transcript, time.Now().Format("15:04:05.000")+" note "+note)
	c.mu.Unlock()
}

// recordingStream logs every message into the client's transcript.
type recordingStream struct {
	jsonrpc2.Stream
	c *Client
}

func (r *recordingStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	msg, n, err := r.Stream.Read(ctx)
	if err == nil {
		r.c.record("<-", msg)
	}
	return msg, n, err
}

func (r *recordingStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	r.c.record("->", msg)
	return r.Stream.Write(ctx, msg)
}

func ptr[T any](v T) *T { return &v }
