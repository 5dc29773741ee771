package lsp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestProgressShowsTheBudgetAndTheLoopWarnings: progress says which turn of
// the budget the task is on, with its tokens and time, and shows the
// warning the loop gives the model when it repeats itself.
func TestProgressShowsTheBudgetAndTheLoopWarnings(t *testing.T) {
	read := call("r", "read_file", `{"path":"a.go"}`)
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{read}},
		{ToolCalls: []fakemodel.ToolCall{read}},
		{Match: &fakemodel.Match{LastUser: "You repeated a tool call"}, Delay: fakemodel.Duration(400 * time.Millisecond), Text: "Foo returns hello.", FinishReason: "stop"},
	}, goFiles, lsptest.Config{WorkDoneProgress: true}, agentOpts{settings: map[string]any{"maxTurns": 7}})
	r, err := a.run(t, map[string]any{"prompt": "What does Foo return?", "mode": "ask"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	st := a.c.Snapshot()
	msgs := reportMessages(progressOf(&st, "agentls: What does Foo return?"))
	for _, want := range []string{"note: You repeated a tool call", "turn 2/7 · ", " tokens · "} {
		if !strings.Contains(msgs, want) {
			t.Errorf("progress lacks %q:\n%s", want, msgs)
		}
	}
}

// TestCostFromThePricesInTheSettings: with a price for the model in the
// settings, the summary and the report give the task's cost.
func TestCostFromThePricesInTheSettings(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{{Text: "Foo returns hello.", FinishReason: "stop"}}, goFiles, lsptest.Config{},
		agentOpts{settings: map[string]any{"prices": map[string]any{"test-model": map[string]float64{"input": 2.5, "output": 10}}}})
	r, err := a.run(t, map[string]any{"prompt": "What does Foo return?", "mode": "ask"})
	if err != nil || !strings.Contains(r.Summary, "($0.") {
		t.Fatalf("summary = %q, %v; want the cost", r.Summary, err)
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); !strings.Contains(rep, "## Cost") {
		t.Errorf("report lacks the cost:\n%s", rep)
	}
}
