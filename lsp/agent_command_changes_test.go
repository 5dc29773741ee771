package lsp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestWhatACommandChangesIsTheTasks: a file a command rewrites (sed -i) and
// one it creates are the task's changes: in changedFiles, diffed in the
// report, and undone by agentls.undo.
func TestWhatACommandChangesIsTheTasks(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"b.go"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "func Bar"}, ToolCalls: []fakemodel.ToolCall{call("c2", "run_command", `{"command":"sed -i 's/return 1/return 2/' b.go && echo made > new.txt"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "exit code 0"}, Text: "Bar returns 2.", FinishReason: "stop"},
	}, goFiles, lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "make Bar return 2 with sed", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	if got := strings.Join(r.ChangedFiles, ","); got != "b.go,new.txt" {
		t.Fatalf("changedFiles = %q; want b.go,new.txt", got)
	}
	reqs := a.model.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "files the command changed") {
		t.Errorf("the model was not told what the command changed")
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); !strings.Contains(rep, "+func Bar() int { return 2 }") {
		t.Errorf("the report lacks the command's diff:\n%s", rep)
	}
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]string{"taskId": r.TaskID})
	var u lsp.UndoReply
	if err != nil || json.Unmarshal(raw, &u) != nil || len(u.Reverted) != 2 {
		t.Fatalf("agentls.undo = %s, %v; want both files reverted", raw, err)
	}
	if b := readFile(t, a.path("b.go")); !strings.Contains(b, "return 1") {
		t.Errorf("b.go after undo = %q", b)
	}
	if _, err := readFileErr(a.path("new.txt")); err == nil {
		t.Errorf("new.txt survived the undo")
	}
}
