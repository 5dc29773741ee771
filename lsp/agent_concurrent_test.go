package lsp_test

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// twoTaskTurns scripts two edit tasks told apart by TASK-A / TASK-B in
// their prompts, each editing its own file; every turn waits d.
func twoTaskTurns(d time.Duration) []fakemodel.Turn {
	delay := fakemodel.Duration(d)
	return []fakemodel.Turn{
		{Match: &fakemodel.Match{LastMessage: "TASK-A"}, Delay: delay, ToolCalls: []fakemodel.ToolCall{call("a1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"A\""}`)}},
		{Match: &fakemodel.Match{LastMessage: "TASK-B"}, Delay: delay, ToolCalls: []fakemodel.ToolCall{call("b1", "edit_file", `{"path":"b.go","old_string":"return 1","new_string":"return 2"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Delay: delay, Text: "A done.", FinishReason: "stop"},
		{Match: &fakemodel.Match{LastToolResult: "edited b.go"}, Delay: delay, Text: "B done.", FinishReason: "stop"},
	}
}

// TestTwoConcurrentTasks: two tasks on different files run at once; both
// complete, each with its own progress token and report, and a code
// action is answered while both run.
func TestTwoConcurrentTasks(t *testing.T) {
	a := newAgentSession(t, twoTaskTurns(300*time.Millisecond), goFiles, lsptest.Config{WorkDoneProgress: true, ApplyEdit: true, CodeActionLiterals: true}, agentOpts{})
	a.open(t, "a.go")
	a.open(t, "b.go")
	var wg sync.WaitGroup
	replies := make([]lsp.RunReply, 2)
	for i, p := range []string{"TASK-A: make Foo say A", "TASK-B: make Bar return 2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := a.run(t, map[string]any{"prompt": p, "mode": "edit"})
			if err != nil {
				t.Error(err)
			}
			replies[i] = r
		}()
	}
	a.c.Await(5*time.Second, "two tasks running", func(s *lsptest.State) bool { return len(s.ProgressOrder) == 2 })
	acts := codeAction(t, a, "a.go", 3, 6, 3, 6, nil)
	if len(acts) == 0 {
		t.Errorf("no code action while two tasks run")
	}
	wg.Wait()
	st := a.c.Snapshot()
	tokens := map[string]bool{}
	for _, tok := range st.ProgressOrder {
		if st.Progress[tok].Ended() {
			tokens[tok] = true
		}
	}
	if len(tokens) != 2 {
		t.Errorf("ended progress tokens = %v; want two", st.ProgressOrder)
	}
	files := []string{}
	for _, r := range replies {
		if r.Status != "completed" {
			t.Errorf("reply = %+v", r)
		}
		files = append(files, r.ChangedFiles...)
		if _, err := os.Stat(uri.URI(r.Report).FsPath()); err != nil {
			t.Errorf("report of %s: %v", r.TaskID, err)
		}
	}
	sort.Strings(files)
	if strings.Join(files, ",") != "a.go,b.go" || replies[0].TaskID == replies[1].TaskID || replies[0].Report == replies[1].Report {
		t.Errorf("replies = %+v", replies)
	}
	ta, _, _ := a.c.Document(a.path("a.go"))
	tb, _, _ := a.c.Document(a.path("b.go"))
	if !strings.Contains(ta, `"A"`) || !strings.Contains(tb, "return 2") {
		t.Errorf("buffers: %q / %q", ta, tb)
	}
}

// codeAction asks for code actions on name at the range, with diagnostics.
func codeAction(t testing.TB, a *agentSession, name string, l1, c1, l2, c2 uint32, diags []protocol.Diagnostic) []json.RawMessage {
	t.Helper()
	if diags == nil {
		diags = []protocol.Diagnostic{}
	}
	p := &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(a.path(name))},
		Range:        protocol.Range{Start: protocol.Position{Line: l1, Character: c1}, End: protocol.Position{Line: l2, Character: c2}},
		Context:      protocol.CodeActionContext{Diagnostics: diags},
	}
	var out []json.RawMessage
	if err := a.c.Call(ctx(t), protocol.MethodTextDocumentCodeAction, p, &out); err != nil {
		t.Fatalf("codeAction: %v", err)
	}
	return out
}
