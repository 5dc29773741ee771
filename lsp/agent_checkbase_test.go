package lsp_test

import (
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// check fails for a reason that predates every task (no ok.txt), and for a
// new one when Foo no longer says hello.
const baselineCheck = `fail=0; grep -q hello a.go || { echo 'FAIL: Foo lost its hello'; fail=1; }; test -f ok.txt || { echo 'FAIL: ok.txt is missing'; fail=1; }; exit $fail`

// TestCheckFailingBeforeTheTaskIsNotBlamed: the check command fails before
// the task's first edit and fails the same way after: the task completes,
// and the report says the failure was there before.
func TestCheckFailingBeforeTheTaskIsNotBlamed(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"b.go","old_string":"return 1","new_string":"return 2"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited b.go"}, Text: "Bar returns 2.", FinishReason: "stop"},
	}, goFiles, lsptest.Config{}, agentOpts{settings: map[string]any{"checkCommand": baselineCheck}})
	r, err := a.run(t, map[string]any{"prompt": "make Bar return 2", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v; want completed (the failure predates the task)", r, err)
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); !strings.Contains(rep, "failed the same way: a failure that was there before the task") {
		t.Errorf("the report does not say the check failed before the task:\n%s", rep)
	}
}

// TestCheckFeedsBackOnlyNewFailures: when the task adds a failure to a
// check that already failed, the model is told only the new failure.
func TestCheckFeedsBackOnlyNewFailures(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Foo says hi.", FinishReason: "stop"},
		{Match: &fakemodel.Match{LastUser: "new since then"}, ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", `{"path":"a.go","old_string":"\"hi\"","new_string":"\"hi, hello\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Foo says hi, hello.", FinishReason: "stop"},
	}, goFiles, lsptest.Config{}, agentOpts{settings: map[string]any{"checkCommand": baselineCheck}})
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi", "mode": "edit"})
	if err != nil || r.Status != "completed" || r.LLMCalls != 4 {
		t.Fatalf("reply = %+v, %v; want completed after 4 calls", r, err)
	}
	var nudge string
	for _, req := range a.model.Requests() {
		if b := string(req.Body); strings.Contains(b, "new since then") {
			nudge = b
			break
		}
	}
	if !strings.Contains(nudge, "FAIL: Foo lost its hello") {
		t.Fatalf("the new failure was not fed back")
	}
	i := strings.Index(nudge, "new since then")
	if strings.Contains(nudge[i:], "ok.txt is missing") {
		t.Errorf("the failure from before the task was fed back as new")
	}
}
