package lsp_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestApplyEditAnsweredLateIsWaitedFor: an editor that answers
// workspace/applyEdit only after its user dismissed a prompt is waited for,
// however long it takes: the task's progress says it is waiting for the
// editor, the edit lands and the task completes with the file changed.
func TestApplyEditAnsweredLateIsWaitedFor(t *testing.T) {
	cfg := lsptest.Config{WorkDoneProgress: true, ApplyEdit: true, BeforeApplyEdit: func(*protocol.ApplyWorkspaceEditParams) {
		time.Sleep(1500 * time.Millisecond)
	}}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Foo says hi.", FinishReason: "stop"},
	}, goFiles, cfg, agentOpts{svc: lsp.ServiceOptions{ApplyNoticeAfter: 200 * time.Millisecond}})
	a.open(t, "a.go")
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi", "mode": "edit"})
	if err != nil || r.Status != "completed" || strings.Join(r.ChangedFiles, ",") != "a.go" {
		t.Fatalf("reply = %+v, %v; want completed with a.go changed", r, err)
	}
	if text, _, _ := a.c.Document(a.path("a.go")); !strings.Contains(text, `"hi"`) {
		t.Errorf("buffer = %q; want the edit", text)
	}
	st := a.c.Snapshot()
	p := progressOf(&st, "agentls: make Foo say hi")
	if p == nil || !strings.Contains(reportMessages(p), "waiting for the editor to apply the edit to a.go") {
		t.Errorf("progress never said it waits for the editor: %+v", p)
	}
}

// TestApplyEditAppliedAfterCancelJoinsTheTask: the user cancels while the
// editor still holds the agent's edit; when the editor then applies it, the
// change is the task's: listed in its result, in its report, and undone by
// agentls.undo. No other edit is sent after the cancel.
func TestApplyEditAppliedAfterCancelJoinsTheTask(t *testing.T) {
	release := make(chan struct{})
	first := true
	cfg := lsptest.Config{WorkDoneProgress: true, ApplyEdit: true, BeforeApplyEdit: func(*protocol.ApplyWorkspaceEditParams) {
		if first {
			first = false
			<-release
		}
	}}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "a.go"}, Text: "Foo says hi.", FinishReason: "stop"},
	}, goFiles, cfg, agentOpts{})
	a.open(t, "a.go")
	done := make(chan lsp.RunReply, 1)
	go func() {
		r, err := a.run(t, map[string]any{"prompt": "make Foo say hi", "mode": "edit"})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	if !waitFor(10*time.Second, func() bool {
		return len(a.svc.TaskList()) == 1 && len(a.c.Transcript()) > 0 && strings.Contains(a.c.Transcript(), "workspace/applyEdit")
	}) {
		t.Fatal("the edit was never sent")
	}
	id := a.svc.TaskList()[0].ID
	if _, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandCancel, map[string]string{"taskId": id}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != "cancelled" {
		t.Fatalf("reply = %+v; want cancelled", r)
	}
	close(release) // the user finally says yes
	a.c.Await(5*time.Second, "the late edit applied", func(s *lsptest.State) bool {
		return len(s.AppliedEdits) == 1 && s.AppliedEdits[0].Result.Applied
	})
	var res lsp.ResultReply
	if !waitFor(5*time.Second, func() bool {
		raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandResult, map[string]string{"taskId": id})
		return err == nil && json.Unmarshal(raw, &res) == nil && strings.Join(res.ChangedFiles, ",") == "a.go"
	}) {
		t.Fatalf("agentls.result = %+v; want a.go among the cancelled task's changes", res)
	}
	report := uri.URI(res.Report).FsPath()
	if !waitFor(5*time.Second, func() bool {
		b, _ := os.ReadFile(report)
		return strings.Contains(string(b), `+func Foo() string { return "hi" }`)
	}) {
		t.Errorf("the report does not show the late change:\n%s", readFile(t, report))
	}
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]string{"taskId": id})
	if err != nil || !strings.Contains(string(raw), `"reverted":["a.go"]`) {
		t.Fatalf("agentls.undo = %s, %v; want a.go reverted", raw, err)
	}
	if text, _, _ := a.c.Document(a.path("a.go")); !strings.Contains(text, `"hello"`) {
		t.Errorf("buffer after undo = %q", text)
	}
	if n := len(a.c.Snapshot().AppliedEdits); n != 2 {
		t.Errorf("%d applyEdit requests; want the late edit and the undo only", n)
	}
}
