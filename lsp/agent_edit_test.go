package lsp_test

import (
	"strings"
	"sync"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestStaleEditRefusedByTheEditorIsRetried: the user types between the
// agent's read and its workspace/applyEdit; the editor refuses the edit
// (version mismatch), the model is told the file changed, reads it again
// and redoes the change. The user's text survives.
func TestStaleEditRefusedByTheEditorIsRetried(t *testing.T) {
	var a *agentSession
	var once sync.Once
	cfg := lsptest.Config{WorkDoneProgress: true, ApplyEdit: true, BeforeApplyEdit: func(*protocol.ApplyWorkspaceEditParams) {
		once.Do(func() {
			start := protocol.Position{Line: 0, Character: 0}
			if _, err := a.c.ChangeDocument(ctx(t), a.path("a.go"), lsptest.Change{Range: &protocol.Range{Start: start, End: start}, Text: "// the user's line\n"}); err != nil {
				t.Error(err)
			}
		})
	}}
	a = newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"a.go"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "func Foo"}, ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "file changed since you read it"}, ToolCalls: []fakemodel.ToolCall{call("c3", "read_file", `{"path":"a.go"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "the user's line"}, ToolCalls: []fakemodel.ToolCall{call("c4", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Done: Foo says hi.", FinishReason: "stop"},
	}, goFiles, cfg, agentOpts{})
	a.open(t, "a.go")
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi", "mode": "edit"})
	if err != nil {
		t.Fatal(err)
	}
	st := a.c.Snapshot()
	if len(st.AppliedEdits) != 2 || st.AppliedEdits[0].Result.Applied || !st.AppliedEdits[1].Result.Applied {
		t.Fatalf("applyEdit answers = %+v; want refused, then applied", st.AppliedEdits)
	}
	if fr := st.AppliedEdits[0].Result.FailureReason; fr == nil || !strings.Contains(*fr, "version mismatch") {
		t.Errorf("first refusal reason = %v", fr)
	}
	text, _, _ := a.c.Document(a.path("a.go"))
	if !strings.HasPrefix(text, "// the user's line\n") || !strings.Contains(text, `return "hi"`) {
		t.Errorf("buffer = %q; want the user's line kept and the agent's edit", text)
	}
	if r.Status != "completed" || r.LLMCalls != 5 {
		t.Errorf("reply = %+v", r)
	}
	reqs := a.model.Requests()
	if len(reqs) < 3 || !strings.Contains(string(reqs[2].Body), "file changed since you read it") {
		t.Errorf("the model was not told the edit was refused")
	}
}

// TestEditOfAFileNotOpenGoesToDisk: a file the editor does not have open
// is written to disk even when the client supports applyEdit; a client
// without applyEdit gets every edit on disk.
func TestEditOfAFileNotOpenGoesToDisk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apply bool
		open  bool
	}{{"applyEdit client, file not open", true, false}, {"client without applyEdit, file open", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentSession(t, []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"b.go","old_string":"return 1","new_string":"return 2"}`)}},
				{Match: &fakemodel.Match{LastToolResult: "edited b.go"}, Text: "Bar returns 2.", FinishReason: "stop"},
			}, goFiles, lsptest.Config{ApplyEdit: tc.apply}, agentOpts{})
			if tc.open {
				a.open(t, "b.go")
			}
			r, err := a.run(t, map[string]any{"prompt": "make Bar return 2", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("reply = %+v, %v", r, err)
			}
			if n := len(a.c.Snapshot().AppliedEdits); n != 0 {
				t.Errorf("%d applyEdit requests; want none", n)
			}
			if b := readFile(t, a.path("b.go")); !strings.Contains(b, "return 2") {
				t.Errorf("b.go on disk = %q", b)
			}
		})
	}
}
