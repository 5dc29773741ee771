package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestServeCommentActionStrictClient drives the built binary over its real
// stdio with a strict generic LSP client (lsptest's Strict: standard
// capabilities only, any agentls/* message or any message it did not
// declare fails the test), as Helix would: "Run agent on this comment" is
// listed on a "// agent:" comment, executed, its command approved through
// window/showMessageRequest, the edit applied through workspace/applyEdit,
// the comment removed, the report opened with window/showDocument.
func TestServeCommentActionStrictClient(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())
	model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command": "ls -a"}`}}},
		{ToolCalls: []fakemodel.ToolCall{{ID: "c2", Name: "edit_file", Arguments: `{"path":"main.go","old_string":"\"hello\"","new_string":"\"HELLO\""}`}}},
		{Text: "main now shouts.", FinishReason: "stop", Times: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	root := t.TempDir()
	src := "package main\n\n// agent: make main shout\nfunc main() { println(\"hello\") }\n"
	file := filepath.Join(root, "main.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(serveEnv(t), "OPENAI_API_KEY=sk-comment-SECRET", "OPENAI_BASE_URL="+model.URL(), "AGENTLS_MODEL=test-model")
	p := lsptest.StartProcess(t, bin, []string{"serve"}, env, lsptest.Config{
		Strict: true, WorkDoneProgress: true, ApplyEdit: true, ShowDocument: true, CodeActionLiterals: true, Roots: []string{root},
		InitializationOptions: map[string]any{"validate": "off", "approval": "ask"},
		ShowMessageRequest: func(q protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
			return &protocol.MessageActionItem{Title: lsp.ActionAllowOnce}
		},
	})
	if _, err := p.Initialize(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.OpenDocument(ctxT(t), file, "go", src); err != nil {
		t.Fatal(err)
	}
	pos := protocol.Position{Line: 2, Character: 4}
	var actions []struct {
		Title   string           `json:"title"`
		Command protocol.Command `json:"command"`
	}
	if err := p.Call(ctxT(t), protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(file)},
		Range:        protocol.Range{Start: pos, End: pos},
		Context:      protocol.CodeActionContext{Diagnostics: []protocol.Diagnostic{}},
	}, &actions); err != nil {
		t.Fatal(err)
	}
	if len(actions) == 0 || actions[0].Title != lsp.TitleRunComment {
		t.Fatalf("code actions = %+v", actions)
	}
	cmd := actions[0].Command
	raw, _, err := p.ExecuteCommand(ctxT(t), cmd.Command, json.RawMessage(cmd.Arguments[0]))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		lsp.RunReply
		CommentRemoved bool `json:"commentRemoved"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Status != "completed" || !r.CommentRemoved {
		t.Fatalf("reply = %s (%v)", raw, err)
	}
	want := "package main\n\nfunc main() { println(\"HELLO\") }\n"
	if text, _, _ := p.Document(file); text != want {
		t.Errorf("buffer = %q; want %q", text, want)
	}
	st := p.Snapshot()
	if len(st.MessageRequests) != 1 || len(st.AppliedEdits) != 2 {
		t.Errorf("approvals %d, applied edits %d; want 1 and 2", len(st.MessageRequests), len(st.AppliedEdits))
	}
	if len(st.ShowDocuments) != 1 || string(st.ShowDocuments[0].URI) != r.Report {
		t.Errorf("showDocument = %+v; want the report %s", st.ShowDocuments, r.Report)
	}
	if strings.Contains(p.Transcript(), "sk-comment-SECRET") {
		t.Errorf("the API key leaked")
	}
}
