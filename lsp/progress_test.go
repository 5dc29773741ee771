package lsp_test

import (
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestProgressNamesThePhase: while the approval question is open the
// progress says the task waits for the user (not "running ls", which has
// not started); once the command has finished and the model takes its
// time, the progress says "thinking" instead of naming the finished step.
func TestProgressNamesThePhase(t *testing.T) {
	answerLater := func(p protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
		time.Sleep(300 * time.Millisecond) // the user reads the question
		return &protocol.MessageActionItem{Title: lsp.ActionAllowOnce}
	}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"ls -a"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "exit code"}, Delay: fakemodel.Duration(1800 * time.Millisecond), Text: "Listed.", FinishReason: "stop"},
	}, goFiles, lsptest.Config{WorkDoneProgress: true, ShowMessageRequest: answerLater}, agentOpts{settings: map[string]any{"approval": "ask"}})
	r, err := a.run(t, map[string]any{"prompt": "list the files", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	st := a.c.Snapshot()
	p := progressOf(&st, "agentls: list the files")
	if p == nil {
		t.Fatal("no progress for the task")
	}
	var activities []string
	for _, rep := range p.Reports {
		if rep.Message != nil {
			line, _, _ := strings.Cut(*rep.Message, " · ")
			activities = append(activities, line)
		}
	}
	all := strings.Join(activities, " | ")
	iWait := strings.Index(all, "waiting for your approval to run `ls -a`")
	iRun := strings.LastIndex(all, "running ls -a")
	iThink := strings.LastIndex(all, "thinking")
	if iWait < 0 {
		t.Errorf("no report says the task waits for the approval: %s", all)
	}
	if iThink < 0 || iThink < iRun {
		t.Errorf("after the command finished, the progress did not say \"thinking\" while the model took 1.8 s: %s", all)
	}
}
