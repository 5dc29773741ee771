package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsAreRedactedExceptInEdits: every text the store writes has the
// configured secrets replaced, except the before/after texts of edits,
// which undo must restore byte for byte.
func TestSecretsAreRedactedExceptInEdits(t *testing.T) {
	const key = "sk-live-0123456789"
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "a.db"), Options{Secrets: func() []string { return []string{key, "short"} }})
	must(t, err)
	t.Cleanup(func() { s.Close(ctx) })
	leak := "OPENAI_API_KEY=" + key
	must(t, s.CreateTask(Task{ID: "T", Prompt: "why is " + key + " rejected", State: "executing"}))
	must(t, s.AppendMessage("T", Message{Seq: 0, Role: "assistant", Content: leak, Reasoning: leak,
		ToolCalls: []CallRequest{{ID: "c1", Name: "run_command", Arguments: `{"command":"echo ` + key + `"}`}}}))
	must(t, s.AppendMessage("T", Message{Seq: 1, Role: "tool", ToolCallID: "c1", Name: "run_command", Content: leak}))
	must(t, s.RecordToolCall("T", ToolCall{CallID: "c1", Name: "run_command", Args: json.RawMessage(`{"command":"echo ` + key + `"}`), Summary: leak}))
	must(t, s.RecordApproval("T", Approval{Tool: "run_command", Decision: DecisionAllowOnce, Summary: leak, Command: "echo " + key}))
	must(t, s.RecordEdit("T", Edit{Path: ".env", Before: "", After: leak + "\n", Created: true}))
	must(t, s.FinishTask("T", TaskEnd{State: StateFailed, Answer: leak, Summary: leak, Error: leak}))
	rec, err := s.LoadTask(ctx, "T")
	must(t, err)

	stored := []struct {
		what, text string
	}{
		{"prompt", rec.Prompt},
		{"answer", rec.Answer},
		{"summary", rec.Summary},
		{"error", rec.Error},
		{"message content", rec.Messages[0].Content},
		{"reasoning", rec.Messages[0].Reasoning},
		{"tool call arguments of a message", rec.Messages[0].ToolCalls[0].Arguments},
		{"tool message", rec.Messages[1].Content},
		{"tool call args", string(rec.ToolCalls[0].Args)},
		{"tool call summary", rec.ToolCalls[0].Summary},
		{"approval summary", rec.Approvals[0].Summary},
		{"approval command", rec.Approvals[0].Command},
	}
	for _, st := range stored {
		if strings.Contains(st.text, key) || !strings.Contains(st.text, "[redacted]") {
			t.Errorf("stored %s = %q; want the key replaced by [redacted]", st.what, st.text)
		}
	}
	if rec.Edits[0].After != leak+"\n" {
		t.Errorf("stored edit after = %q; want the file's text byte for byte", rec.Edits[0].After)
	}
}

// TestToolCallSummaryKeepsHeadAndTail: a long result text is stored as its
// head and its tail, so the record stays small and the end of a command's
// output (where errors are) survives.
func TestToolCallSummaryKeepsHeadAndTail(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	must(t, s.CreateTask(Task{ID: "T", Prompt: "p"}))
	long := "HEAD" + strings.Repeat("x", 10*summaryMax) + "TAIL"
	must(t, s.RecordToolCall("T", ToolCall{CallID: "c1", Name: "run_command", Summary: long}))
	must(t, s.RecordToolCall("T", ToolCall{CallID: "c2", Name: "run_command", Summary: "short"}))
	rec, err := s.LoadTask(ctx, "T")
	must(t, err)
	got := rec.ToolCalls[0].Summary
	if len(got) > summaryMax+64 || !strings.HasPrefix(got, "HEAD") || !strings.HasSuffix(got, "TAIL") || !strings.Contains(got, "bytes cut") {
		t.Errorf("stored summary of %d bytes = %d bytes %q...; want head and tail within %d bytes", len(long), len(got), got[:40], summaryMax)
	}
	if rec.ToolCalls[1].Summary != "short" {
		t.Errorf("stored short summary = %q; want it unchanged", rec.ToolCalls[1].Summary)
	}
}

// TestMessageToolCallsKeepTheirJSONNames: a message's tool calls are stored
// as JSON under fixed names (id, name, arguments, incomplete), the format
// existing databases hold, and read back from it.
func TestMessageToolCallsKeepTheirJSONNames(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	must(t, s.CreateTask(Task{ID: "T", Prompt: "p"}))
	calls := []CallRequest{{ID: "c1", Name: "grep", Arguments: `{"pattern":"Foo"}`}, {ID: "c2", Name: "read_file", Arguments: `{"pa`, Incomplete: true}}
	must(t, s.AppendMessage("T", Message{Seq: 0, Role: "assistant", ToolCalls: calls}))
	flushTest(t, s)
	var raw string
	must(t, s.r.QueryRowContext(ctx, `SELECT tool_calls FROM messages WHERE task_id = 'T' AND seq = 0`).Scan(&raw))
	want := `[{"id":"c1","name":"grep","arguments":"{\"pattern\":\"Foo\"}"},{"id":"c2","name":"read_file","arguments":"{\"pa","incomplete":true}]`
	if raw != want {
		t.Errorf("stored tool_calls = %s; want %s", raw, want)
	}
	rec, err := s.LoadTask(ctx, "T")
	must(t, err)
	if got := rec.Messages[0].ToolCalls; len(got) != 2 || got[0] != calls[0] || got[1] != calls[1] {
		t.Errorf("tool calls read back = %+v; want %+v", got, calls)
	}
}

// TestPlanIsStoredAsGivenAndMustBeJSON: the store keeps a plan's JSON text
// as the agent wrote it and refuses text that is not JSON.
func TestPlanIsStoredAsGivenAndMustBeJSON(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	must(t, s.CreateTask(Task{ID: "T", Prompt: "p"}))
	if err := s.RecordPlan("T", PlanUpdate{Plan: json.RawMessage(`{"items":[`)}); err == nil {
		t.Error("RecordPlan with cut JSON succeeded; want an error")
	}
	plan := `{"items":[{"id":"1","text":"a","status":"pending"}]}`
	must(t, s.RecordPlan("T", PlanUpdate{Plan: json.RawMessage(plan), Open: 1}))
	rec, err := s.LoadTask(ctx, "T")
	must(t, err)
	if string(rec.Plan) != plan || rec.PlanSeq != 1 {
		t.Errorf("plan = %s (seq %d); want %s (seq 1)", rec.Plan, rec.PlanSeq, plan)
	}
	var open int
	must(t, s.r.QueryRowContext(ctx, `SELECT open_items FROM plans WHERE task_id = 'T'`).Scan(&open))
	if open != 1 {
		t.Errorf("open_items = %d; want 1", open)
	}
}
