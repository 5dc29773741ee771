package journal

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

// TestWriterRecordsEveryRecord writes one of each record through a Writer
// to a real store and reads the task back: each lands in its row, in the
// store's form, and Commit makes it durable (read on a reader connection).
func TestWriterRecordsEveryRecord(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	w := NewWriter(st)
	plan := tools.Plan{Items: []tools.PlanItem{{ID: "1", Text: "fix it", Status: tools.PlanPending}}}
	for _, r := range []Record{
		TaskCreated{SessionID: "s-1", Kind: "edit", Prompt: "fix a.go", EditorContext: json.RawMessage(`{"file":"a.go"}`), State: "queued"},
		TaskState{State: "executing"},
		MessageAdded{Seq: 0, Message: llm.Message{Role: llm.RoleSystem, Content: "sys"}},
		MessageAdded{Seq: 1, Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "grep", Arguments: `{}`}}},
			ModelCall: true, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}, Duration: time.Second},
		MessageAdded{Seq: 2, Message: llm.Message{Role: llm.RoleAssistant, Content: "cut"}, ModelCall: true, Excluded: ExcludedTruncated},
		MessagesExcluded{Reason: ExcludedCompacted, Seqs: []int{0}},
		ToolCalled{CallID: "c1", Result: tools.Result{Tool: "grep", Args: json.RawMessage(`{"pattern":"x"}`), Text: "a.go:1: x", IsError: true, Duration: time.Millisecond}},
		PlanUpdated{Plan: plan},
		FileEdited{Path: "a.go", Before: "", After: "x\n", Created: true},
		ApprovalAnswered{Request: tools.ApprovalRequest{Tool: "run_command", Summary: "run go vet", Command: "go vet"}, Decision: tools.AllowAlways},
		TaskEnded{State: "failed", StopReason: "check_failed", Answer: "no", Summary: "no", Error: "boom", ModelCalls: 2,
			Lesson: &Learned{About: "fix a.go", Text: "it failed", Tags: "edit"}},
		Commit{},
	} {
		if err := w.Record(ctx, "t-1", r); err != nil {
			t.Fatalf("Record(%T): %v", r, err)
		}
	}
	rec, err := st.LoadTask(ctx, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.SessionID != "s-1" || rec.Kind != "edit" || rec.Prompt != "fix a.go" || string(rec.EditorContext) != `{"file":"a.go"}` {
		t.Errorf("task row = %+v", rec.Task)
	}
	if rec.State != "failed" || rec.StopReason != "check_failed" || rec.Error != "boom" || rec.Answer != "no" {
		t.Errorf("end = %s/%s %q %q", rec.State, rec.StopReason, rec.Error, rec.Answer)
	}
	if len(rec.Messages) != 3 || !rec.Messages[0].Excluded || rec.Messages[0].ExcludedReason != ExcludedCompacted ||
		rec.Messages[1].ToolCalls[0].ID != "c1" || !rec.Messages[2].Excluded || rec.Messages[2].ExcludedReason != ExcludedTruncated {
		t.Errorf("messages = %+v", rec.Messages)
	}
	if rec.LLMCalls != 2 || rec.Usage.InputTokens != 10 {
		t.Errorf("totals: %d calls, %+v", rec.LLMCalls, rec.Usage)
	}
	if len(rec.ToolCalls) != 1 || rec.ToolCalls[0].Name != "grep" || !rec.ToolCalls[0].IsError || string(rec.ToolCalls[0].Args) != `{"pattern":"x"}` {
		t.Errorf("tool calls = %+v", rec.ToolCalls)
	}
	if p, err := StoredPlan(rec); err != nil || p == nil || p.Items[0].Text != "fix it" {
		t.Errorf("plan = %+v, %v", p, err)
	}
	if len(rec.Edits) != 1 || rec.Edits[0].Path != "a.go" || !rec.Edits[0].Created {
		t.Errorf("edits = %+v", rec.Edits)
	}
	if len(rec.Approvals) != 1 || rec.Approvals[0].Decision != store.DecisionAllowAlways || rec.Approvals[0].Prefix != "go vet" {
		t.Errorf("approvals = %+v", rec.Approvals)
	}
	if ls, err := st.SearchLessons(ctx, "fix a.go", 5); err != nil || len(ls) != 1 || ls[0].TaskID != "t-1" || ls[0].Text != "it failed" {
		t.Errorf("lessons = %+v, %v", ls, err)
	}
}

// TestWriterRefusesNoRecord: a nil record is an error, not a silent
// success (the set is closed; nothing else reaches the switch).
func TestWriterRefusesNoRecord(t *testing.T) {
	if err := NewWriter(nil).Record(context.Background(), "t", nil); err == nil || !strings.Contains(err.Error(), "no such record") {
		t.Errorf("Record(nil) = %v; want an error", err)
	}
}

// openStore is a real store in a temporary folder, closed at the end of
// the test.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(ctx) })
	return st
}
