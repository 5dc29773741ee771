package lsp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.lsp.dev/uri"
	"golang.org/x/tools/txtar"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// greetFiles is the Go module of langserver/testdata/greet.txtar: Greet
// used across packages, Total with three callers, both names also in
// comments and strings.
func greetFiles(t *testing.T) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		t.Fatalf("gopls is not on PATH: run make install: %v", err)
	}
	ar, err := txtar.ParseFile("../langserver/testdata/greet.txtar")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range ar.Files {
		files[f.Name] = string(f.Data)
	}
	return files
}

// TestRenameSymbolThroughAPlainClient: a plain LSP client (no plugin),
// agentls's own gopls: "rename Greet to Hello everywhere" is one
// rename_symbol call and no edit_file call, the module builds afterwards,
// and agentls.undo reverts it in one step.
func TestRenameSymbolThroughAPlainClient(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "rename_symbol", `{"file":"greet/greet.go","symbol":"Greet","new_name":"Hello"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "renamed Greet to Hello via gopls"}, Text: "Greet is now Hello everywhere.", FinishReason: "stop"},
	}, greetFiles(t), lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "rename Greet to Hello everywhere", "mode": "edit"})
	if err != nil || r.Status != "completed" || r.LLMCalls != 2 {
		t.Fatalf("reply = %+v, %v; want completed after 2 model calls", r, err)
	}
	if got := strings.Join(r.ChangedFiles, ","); got != "greet/greet.go,main.go" {
		t.Errorf("changedFiles = %q; want greet/greet.go,main.go", got)
	}
	for _, req := range a.model.Requests() {
		if strings.Contains(string(req.Body), `"name":"edit_file","arguments"`) {
			t.Errorf("an edit_file call was made")
		}
	}
	build := exec.Command("go", "build", "./...")
	build.Dir = a.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build after the rename: %v\n%s", err, out)
	}
	if b := readFile(t, a.path("main.go")); !strings.Contains(b, "greet.Hello(") || !strings.Contains(b, `"Total"`) {
		t.Errorf("main.go after the rename:\n%s", b)
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); !strings.Contains(rep, "rename_symbol") || !strings.Contains(rep, "main.go") {
		t.Errorf("the report does not list the rename and its files:\n%s", rep)
	}
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]string{"taskId": r.TaskID})
	var u lsp.UndoReply
	if err != nil || json.Unmarshal(raw, &u) != nil || len(u.Reverted) != 2 {
		t.Fatalf("agentls.undo = %s, %v; want both files reverted in one step", raw, err)
	}
	if b, _ := os.ReadFile(a.path("greet/greet.go")); !strings.Contains(string(b), "func Greet(") {
		t.Errorf("greet.go after undo:\n%s", b)
	}
}

// TestWhoCallsTotalThroughAPlainClient: "who calls Total?" is answered
// from one references call, listing the three calls and neither the
// comment nor the string that mention Total.
func TestWhoCallsTotalThroughAPlainClient(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "references", `{"file":"order/total.go","symbol":"Total"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "references of Total"}, Text: "Summary, Average and TotalTax call Total.", FinishReason: "stop"},
	}, greetFiles(t), lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "who calls Total?", "mode": "ask"})
	if err != nil || r.Status != "completed" || r.LLMCalls != 2 {
		t.Fatalf("reply = %+v, %v; want completed after 2 model calls", r, err)
	}
	reqs := a.model.Requests()
	last := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"via gopls: 3 in 2 file(s)", "order/summary.go", "6: return fmt.Sprintf", "13: return Total(prices) / len(prices)", "order/total.go", "13: func TotalTax"} {
		if !strings.Contains(last, want) {
			t.Errorf("the references result lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(last, `main.go\n`) || strings.Contains(last, "Total is printed") {
		t.Errorf("the references result lists a comment or string mention")
	}
}

// editorGopls is the fake editor's own gopls (a langserver pool of the
// test, standing for the server the editor runs): it answers agentls/lsp
// as the plugins do, forwarding the request to it.
func editorGopls(t *testing.T, root *string) func(method string, params json.RawMessage) (json.RawMessage, error) {
	pool := langserver.NewPool(0)
	t.Cleanup(func() { pool.Close() })
	return func(method string, params json.RawMessage) (json.RawMessage, error) {
		pool.Configure([]string{*root}, nil, "")
		var p struct {
			TextDocument struct {
				URI uri.URI `json:"uri"`
			} `json:"textDocument"`
		}
		_ = json.Unmarshal(params, &p)
		var raw json.RawMessage
		if p.TextDocument.URI == "" {
			err := pool.WorkspaceRequest(context.Background(), method, params, func(_ string, decode func(any) error) { _ = decode(&raw) })
			return raw, err
		}
		file := p.TextDocument.URI.Path()
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		_, err = pool.Request(context.Background(), file, string(b), method, params, &raw)
		return raw, err
	}
}

// TestReferencesFromTheEditorsServer: with a plugin that forwards
// agentls/lsp, "who calls Total?" is answered by the editor's own server
// (source 1), not by one agentls starts.
func TestReferencesFromTheEditorsServer(t *testing.T) {
	var root string
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "references", `{"file":"order/total.go","symbol":"Total"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "references of Total"}, Text: "Summary, Average and TotalTax call Total.", FinishReason: "stop"},
	}, greetFiles(t), lsptest.Config{SaveDocuments: true, LSP: editorGopls(t, &root)}, agentOpts{})
	root = a.root
	r, err := a.run(t, map[string]any{"prompt": "who calls Total?", "mode": "ask"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	reqs := a.model.Requests()
	last := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"via the editor's language server: 3 in 2 file(s)", "13: return Total(prices) / len(prices)"} {
		if !strings.Contains(last, want) {
			t.Errorf("the references result lacks %q:\n%s", want, last)
		}
	}
	if got := a.c.Snapshot().Forwarded; len(got) == 0 || got[len(got)-1] != "textDocument/references" {
		t.Errorf("agentls/lsp requests %v; want textDocument/references forwarded", got)
	}
}

// TestEditErrorsFromOwnServerForAPlainClient: a plain client shares no
// diagnostics; the edit's result still lists the error it introduced, as
// agentls's own gopls reports it, and the reply lists it too.
func TestEditErrorsFromOwnServerForAPlainClient(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"main.go","old_string":"greet.Greet(\"world\")","new_string":"greet.Greet(42)"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited main.go"}, Text: "Done.", FinishReason: "stop"},
	}, greetFiles(t), lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "greet 42", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	reqs := a.model.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "1 new error(s)") || !strings.Contains(last, "cannot use 42") {
		t.Errorf("the edit's result lacks gopls's new error:\n%s", last)
	}
	if len(r.IntroducedErrors) != 1 || !strings.Contains(r.IntroducedErrors[0], "main.go:11: cannot use 42") {
		t.Errorf("introducedErrors = %q; want gopls's error in main.go", r.IntroducedErrors)
	}
}
