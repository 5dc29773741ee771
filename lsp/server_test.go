package lsp_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

func TestInitializeResult(t *testing.T) {
	s := newSession(t, lsptest.Config{CodeActionLiterals: true})
	res, err := s.c.Initialize(ctx(t))
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "agentls" {
		t.Errorf("server name = %q; want agentls", res.ServerInfo.Name)
	}
	if v, _ := res.ServerInfo.Version.Get(); v != "test-1" {
		t.Errorf("server version = %q; want test-1", v)
	}
	sync, ok := res.Capabilities.TextDocumentSync.(*protocol.TextDocumentSyncOptions)
	if !ok {
		t.Fatalf("textDocumentSync = %T; want options", res.Capabilities.TextDocumentSync)
	}
	if sync.Change == nil || *sync.Change != protocol.TextDocumentSyncKindIncremental {
		t.Errorf("textDocumentSync.change = %v; want incremental", sync.Change)
	}
	if sync.OpenClose == nil || !*sync.OpenClose || sync.Save == nil {
		t.Errorf("textDocumentSync = %+v; want openClose and save", sync)
	}
	got := strings.Join(res.Capabilities.ExecuteCommandProvider.Commands, ",")
	if got != "test.echo,test.panic,test.sleep" {
		t.Errorf("commands = %s; want the registered ones", got)
	}
	if _, ok := res.Capabilities.CodeActionProvider.(*protocol.CodeActionOptions); !ok {
		t.Errorf("codeActionProvider = %T; want options for a client with literal support", res.Capabilities.CodeActionProvider)
	}
	// A second initialize is an invalid request.
	if err := s.c.Call(ctx(t), protocol.MethodInitialize, &protocol.InitializeParams{}, nil); code(err) != jsonrpc2.InvalidRequest {
		t.Errorf("second initialize: %v; want InvalidRequest", err)
	}
}

func TestLifecycleErrors(t *testing.T) {
	s := newSession(t, lsptest.Config{})
	// Before initialize.
	var echo any
	_, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "x"})
	if code(err) != jsonrpc2.ServerNotInitialized {
		t.Errorf("request before initialize: %v; want ServerNotInitialized (-32002)", err)
	}
	if _, err := s.c.Initialize(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Call(ctx(t), "textDocument/hover", map[string]any{}, &echo); code(err) != jsonrpc2.MethodNotFound {
		t.Errorf("unknown method: %v; want MethodNotFound", err)
	}
	if err := s.c.Call(ctx(t), "agentls/noSuchThing", nil, &echo); code(err) != jsonrpc2.MethodNotFound {
		t.Errorf("unknown custom method: %v; want MethodNotFound", err)
	}
	// An unknown notification is ignored; the connection goes on.
	if err := s.c.Notify(ctx(t), "$/unknownNotification", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "x"}); err != nil {
		t.Errorf("echo after unknown notification: %v", err)
	}
	if err := s.c.Shutdown(ctx(t)); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "x"}); code(err) != jsonrpc2.InvalidRequest {
		t.Errorf("request after shutdown: %v; want InvalidRequest", err)
	}
	if err := s.c.Exit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := waitServe(t, s.served); err != nil {
		t.Errorf("Serve after shutdown+exit = %v; want nil", err)
	}
}

func waitServe(t *testing.T, served <-chan error) error {
	t.Helper()
	select {
	case err := <-served:
		return err
	case <-time.After(2 * time.Second):
		t.Fatal("Serve did not return within 2 s")
		return nil
	}
}

// TestExitCodes: Serve's result is what the exit code is made of.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shutdown bool
		end      func(s *session) // how the session ends
		want     error
	}{
		{"shutdown then exit", true, func(s *session) { _ = s.c.Exit(context.Background()) }, nil},
		{"exit without shutdown", false, func(s *session) { _ = s.c.Exit(context.Background()) }, server.ErrExitWithoutShutdown},
		{"end of input after shutdown", true, func(s *session) { s.c.Close() }, nil},
		{"end of input without shutdown", false, func(s *session) { s.c.Close() }, server.ErrExitWithoutShutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := initialized(t, lsptest.Config{})
			if tc.shutdown {
				if err := s.c.Shutdown(ctx(t)); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			tc.end(s)
			if err := waitServe(t, s.served); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("Serve = %v; want %v", err, tc.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Serve took %v to return; want under 1 s", d)
			}
		})
	}
}

// TestNotificationsInOrder: 3,000 didChange notifications, each appending
// its own number, arrive in order (the stock go.lsp.dev chain reorders
// them).
func TestNotificationsInOrder(t *testing.T) {
	s := initialized(t, lsptest.Config{})
	name := filepath.Join(t.TempDir(), "order.txt")
	if err := s.c.OpenDocument(ctx(t), name, "plaintext", ""); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 3000 {
		text, _, _ := s.c.Document(name)
		item := fmt.Sprintf("%d,", i)
		end := lsptest.PositionAt(text, len([]rune(text))) // ASCII: runes == UTF-16 units
		if _, err := s.c.ChangeDocument(ctx(t), name, lsptest.Change{Range: &protocol.Range{Start: end, End: end}, Text: item}); err != nil {
			t.Fatal(err)
		}
		want.WriteString(item)
	}
	// A request is handled after every notification sent before it.
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "sync"}); err != nil {
		t.Fatal(err)
	}
	doc, ok := s.srv.Buffers().Get(name)
	if !ok {
		t.Fatal("document not open on the server")
	}
	if doc.Text != want.String() {
		t.Errorf("server text differs from the order sent (len %d vs %d)", len(doc.Text), want.Len())
	}
	if doc.Version != 3001 {
		t.Errorf("version = %d; want 3001", doc.Version)
	}
}

func TestPanicInHandler(t *testing.T) {
	s := initialized(t, lsptest.Config{})
	_, _, err := s.c.ExecuteCommand(ctx(t), "test.panic", nil)
	if code(err) != jsonrpc2.InternalError || !strings.Contains(err.Error(), "assignment to entry in nil map") {
		t.Errorf("panicking command: %v; want InternalError naming the panic", err)
	}
	s.c.Await(2*time.Second, "a logMessage about the panic", func(st *lsptest.State) bool {
		return st.HasLogMessage("panic in handler")
	})
	// The connection survives.
	if res, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "alive"}); err != nil || !strings.Contains(string(res), "alive") {
		t.Errorf("echo after panic = %s, %v", res, err)
	}
}

// TestPanicInNotificationHandler: a panic while handling a notification is
// logged and the connection goes on.
func TestPanicInNotificationHandler(t *testing.T) {
	calls := 0
	s := initialized(t, lsptest.Config{}, server.WithRootsHandler(func([]string) {
		if calls++; calls > 1 { // not during initialize
			panic("roots handler exploded")
		}
	}))
	err := s.c.Notify(ctx(t), protocol.MethodWorkspaceDidChangeWorkspaceFolders, &protocol.DidChangeWorkspaceFoldersParams{})
	if err != nil {
		t.Fatal(err)
	}
	s.c.Await(2*time.Second, "a logMessage about the panic", func(st *lsptest.State) bool {
		return st.HasLogMessage("roots handler exploded")
	})
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "alive"}); err != nil {
		t.Errorf("echo after notification panic: %v", err)
	}
}

func TestCancelRequest(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan error, 1)
	waiter := &server.Command[struct{}, any]{
		Name: "test.wait",
		Run: func(ctx context.Context, _ *server.Invocation, _ struct{}) (any, error) {
			close(started)
			<-ctx.Done()
			stopped <- ctx.Err()
			return nil, ctx.Err()
		},
	}
	s := initialized(t, lsptest.Config{}, server.WithCommands(waiter))
	callCtx, cancel := context.WithCancel(ctx(t))
	errc := make(chan error, 1)
	go func() {
		_, _, err := s.c.ExecuteCommand(callCtx, "test.wait", nil)
		errc <- err
	}()
	<-started
	cancel() // protocol.Call sends $/cancelRequest
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("command context error = %v; want Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("$/cancelRequest did not cancel the command's context")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("ExecuteCommand = %v; want the caller's cancellation", err)
	}
	// Over the wire the reply is RequestCancelled: check with a raw call
	// whose cancel we send ourselves.
	if err := s.c.Call(ctx(t), protocol.MethodWorkspaceExecuteCommand, &protocol.ExecuteCommandParams{Command: "test.echo", Arguments: []protocol.LSPAny{protocol.LSPAny(`{"text":"x"}`)}}, nil); err != nil {
		t.Errorf("connection unusable after cancel: %v", err)
	}
}

func TestCommandArguments(t *testing.T) {
	s := initialized(t, lsptest.Config{})
	for _, tc := range []struct {
		name    string
		command string
		args    []protocol.LSPAny
		code    jsonrpc2.Code
		msg     string // substring of the error or the result
	}{
		{"good", "test.echo", []protocol.LSPAny{protocol.LSPAny(`{"text":"hi"}`)}, 0, `"text":"hi"`},
		{"unknown field", "test.echo", []protocol.LSPAny{protocol.LSPAny(`{"txt":"hi"}`)}, jsonrpc2.InvalidParams, `test.echo: invalid argument: unknown field "txt"; expected {"text": string}`},
		{"wrong type", "test.echo", []protocol.LSPAny{protocol.LSPAny(`{"text":5}`)}, jsonrpc2.InvalidParams, `expected {"text": string}`},
		{"not an object", "test.echo", []protocol.LSPAny{protocol.LSPAny(`"hi"`)}, jsonrpc2.InvalidParams, "must be a JSON object"},
		{"validation", "test.echo", []protocol.LSPAny{protocol.LSPAny(`{"text":""}`)}, jsonrpc2.InvalidParams, `"text" must not be empty`},
		{"two arguments", "test.echo", []protocol.LSPAny{protocol.LSPAny(`{}`), protocol.LSPAny(`{}`)}, jsonrpc2.InvalidParams, "one argument object, got 2"},
		{"unknown command", "test.nope", nil, jsonrpc2.InvalidParams, `unknown command "test.nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res any
			err := s.c.Call(ctx(t), protocol.MethodWorkspaceExecuteCommand, &protocol.ExecuteCommandParams{Command: tc.command, Arguments: tc.args}, &res)
			if tc.code == 0 {
				if err != nil || !strings.Contains(mustJSON(t, res), tc.msg) {
					t.Errorf("result = %v, %v; want %s", res, err, tc.msg)
				}
				return
			}
			if code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error = %v (code %d); want code %d with %q", err, code(err), tc.code, tc.msg)
			}
		})
	}
}

func TestCommandNew(t *testing.T) {
	cmd, err := cmdEcho.New("Echo", echoArgs{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Command != "test.echo" || len(cmd.Arguments) != 1 {
		t.Fatalf("New = %+v", cmd)
	}
	got, err := cmdEcho.Decode(cmd.Arguments)
	if err != nil || got.Text != "hi" {
		t.Errorf("Decode(New(args)) = %+v, %v; want the same args", got, err)
	}
}

func TestWorkspaceRoots(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	var seen [][]string
	s := initialized(t, lsptest.Config{Roots: []string{b, a}}, server.WithRootsHandler(func(r []string) { seen = append(seen, r) }))
	want := []string{a, b}
	if a > b {
		want = []string{b, a}
	}
	if got := s.srv.Roots(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Roots() = %v; want %v", got, want)
	}
	err := s.c.Notify(ctx(t), protocol.MethodWorkspaceDidChangeWorkspaceFolders, &protocol.DidChangeWorkspaceFoldersParams{
		Event: protocol.WorkspaceFoldersChangeEvent{
			Added:   []protocol.WorkspaceFolder{{URI: lsptest.FileURI(c), Name: "c"}, {URI: "untitled:x", Name: "bad"}},
			Removed: []protocol.WorkspaceFolder{{URI: lsptest.FileURI(a), Name: "a"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "sync"}); err != nil {
		t.Fatal(err)
	}
	want = []string{b, c}
	if b > c {
		want = []string{c, b}
	}
	if got := s.srv.Roots(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Roots() after change = %v; want %v", got, want)
	}
	if len(seen) != 2 {
		t.Errorf("roots handler called %d times; want 2", len(seen))
	}
}

func TestRootsFromRootURIAndPath(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"rootUri", map[string]any{"processId": nil, "rootUri": string(lsptest.FileURI(dir)), "capabilities": map[string]any{}}, dir},
		{"rootPath", map[string]any{"processId": nil, "rootUri": nil, "rootPath": dir, "capabilities": map[string]any{}}, dir},
		{"relative rootPath", map[string]any{"processId": nil, "rootUri": nil, "rootPath": "rel/dir", "capabilities": map[string]any{}}, ""},
		{"no root", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, lsptest.Config{})
			if err := s.c.Call(ctx(t), protocol.MethodInitialize, tc.params, nil); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(s.srv.Roots(), ","); got != tc.want {
				t.Errorf("Roots() = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestDocumentSync(t *testing.T) {
	s := initialized(t, lsptest.Config{})
	name := filepath.Join(t.TempDir(), "a.go")
	sync := func() {
		t.Helper()
		if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "sync"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.c.OpenDocument(ctx(t), name, "go", "package a\n\nfunc 世界() {}\n"); err != nil {
		t.Fatal(err)
	}
	// Replace 世界 (UTF-16 columns 5..7 of line 2) with 😀, then the whole text.
	if _, err := s.c.ChangeDocument(ctx(t), name,
		lsptest.Change{Range: &protocol.Range{Start: protocol.Position{Line: 2, Character: 5}, End: protocol.Position{Line: 2, Character: 7}}, Text: "😀x"},
		lsptest.Change{Range: &protocol.Range{Start: protocol.Position{Line: 2, Character: 7}, End: protocol.Position{Line: 2, Character: 8}}, Text: "y"},
	); err != nil {
		t.Fatal(err)
	}
	sync()
	doc, _ := s.srv.Buffers().Get(name)
	if doc.Text != "package a\n\nfunc 😀y() {}\n" || doc.Version != 2 || doc.LanguageID != "go" {
		t.Errorf("after didChange: %+v", doc)
	}
	if _, err := s.c.ChangeDocument(ctx(t), name, lsptest.Change{Text: "whole\n"}); err != nil {
		t.Fatal(err)
	}
	// didSave with text that differs brings the buffer in line.
	saved := "saved\n"
	if err := s.c.Notify(ctx(t), protocol.MethodTextDocumentDidSave, &protocol.DidSaveTextDocumentParams{TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(name)}, Text: &saved}); err != nil {
		t.Fatal(err)
	}
	sync()
	if doc, _ := s.srv.Buffers().Get(name); doc.Text != "saved\n" {
		t.Errorf("after didSave: %q", doc.Text)
	}
	// A change that does not fit is logged, not fatal.
	bad := &protocol.DidChangeTextDocumentParams{
		TextDocument: protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(name)}, Version: 9},
		ContentChanges: []protocol.TextDocumentContentChangeEvent{&protocol.TextDocumentContentChangePartial{
			Range: protocol.Range{Start: protocol.Position{Line: 40}, End: protocol.Position{Line: 41}}, Text: "x"}},
	}
	if err := s.c.Notify(ctx(t), protocol.MethodTextDocumentDidChange, bad); err != nil {
		t.Fatal(err)
	}
	s.c.Await(2*time.Second, "an error log about the bad change", func(st *lsptest.State) bool {
		return st.HasLogMessage("notification failed")
	})
	// Non-file documents are ignored.
	if err := s.c.Notify(ctx(t), protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{TextDocument: protocol.TextDocumentItem{URI: "untitled:Untitled-1", Version: 1, Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.c.CloseDocument(ctx(t), name); err != nil {
		t.Fatal(err)
	}
	sync()
	if names := s.srv.Buffers().Filenames(); len(names) != 0 {
		t.Errorf("open documents after close = %v; want none", names)
	}
}

func TestInvalidParamsForNotificationAndRequest(t *testing.T) {
	s := initialized(t, lsptest.Config{})
	// A request with params of the wrong type gets InvalidParams.
	err := s.c.Call(ctx(t), protocol.MethodWorkspaceExecuteCommand, map[string]any{"command": 42}, nil)
	if code(err) != jsonrpc2.InvalidParams {
		t.Errorf("executeCommand with a numeric command: %v; want InvalidParams", err)
	}
	// A notification with bad params is logged, and the connection lives.
	if err := s.c.Notify(ctx(t), protocol.MethodTextDocumentDidOpen, map[string]any{"textDocument": 5}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "alive"}); err != nil {
		t.Errorf("echo after a bad notification: %v", err)
	}
}
