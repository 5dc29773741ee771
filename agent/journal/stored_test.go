package journal

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

// TestStoredMessageRoundTrip: a message of the history survives the trip
// through the store's form unchanged, tool calls and reasoning included.
func TestStoredMessageRoundTrip(t *testing.T) {
	for _, m := range []llm.Message{
		{Role: llm.RoleSystem, Content: "You are agentls."},
		{Role: llm.RoleUser, Content: "rename Foo"},
		{Role: llm.RoleUser, Content: "what is this?", Images: []llm.Image{{MIMEType: "image/png", Data: png1x1}}},
		{Role: llm.RoleAssistant, Reasoning: "look first", ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "grep", Arguments: `{"pattern":"Foo"}`},
			{ID: "c2", Name: "read_file", Arguments: `{"pa`, Incomplete: true},
		}},
		{Role: llm.RoleTool, ToolCallID: "c1", Name: "grep", Content: "main.go:3: func Foo()"},
		{Role: llm.RoleAssistant, Content: "done"},
	} {
		if got := historyMessage(storedMessage(m)); !reflect.DeepEqual(got, m) {
			t.Errorf("historyMessage(storedMessage(%+v)) = %+v; want it unchanged", m, got)
		}
	}
}

// TestStoredToolCallsKeepTheDatabaseFormat: a message's tool calls are
// stored as JSON; the store's form marshals exactly as llm.ToolCall, the
// type earlier versions wrote, so existing databases read back unchanged.
func TestStoredToolCallsKeepTheDatabaseFormat(t *testing.T) {
	calls := []llm.ToolCall{{ID: "c1", Name: "grep", Arguments: `{"pattern":"Foo"}`}, {ID: "c2", Name: "x", Arguments: `{`, Incomplete: true}}
	want, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(storedMessage(llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}).ToolCalls)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("stored tool calls marshal to %s; want %s", got, want)
	}
}

// TestDecisionNames: every approval decision has its stored name.
func TestDecisionNames(t *testing.T) {
	for d, want := range map[tools.Decision]string{
		tools.Deny:         store.DecisionDeny,
		tools.AllowOnce:    store.DecisionAllowOnce,
		tools.AllowForTask: store.DecisionAllowTask,
		tools.AllowAlways:  store.DecisionAllowAlways,
		tools.Decision(9):  "decision_9",
	} {
		if got := decisionName(d); got != want {
			t.Errorf("decisionName(%d) = %q; want %q", d, got, want)
		}
	}
}

// TestPlanRoundTrip: a plan stored as JSON decodes to the same plan, and the
// store is told how many of its items are open.
func TestPlanRoundTrip(t *testing.T) {
	p := tools.Plan{Items: []tools.PlanItem{
		{ID: "1", Text: "find Foo", Status: tools.PlanDone},
		{ID: "2", Text: "rename", Status: tools.PlanInProgress},
		{ID: "3", Text: "docs", Status: tools.PlanSkipped, Reason: "none"},
	}}
	u, err := planUpdate(p)
	if err != nil {
		t.Fatal(err)
	}
	if u.Open != 1 {
		t.Errorf("planUpdate(...).Open = %d; want 1", u.Open)
	}
	got, err := StoredPlan(&store.TaskRecord{Plan: u.Plan, PlanSeq: 1})
	if err != nil || got == nil || !reflect.DeepEqual(*got, p) {
		t.Errorf("storedPlan = %+v, %v; want %+v", got, err, p)
	}
	if got, err := StoredPlan(&store.TaskRecord{}); got != nil || err != nil {
		t.Errorf("storedPlan of a task without plan = %+v, %v; want nil, nil", got, err)
	}
	if _, err := StoredPlan(&store.TaskRecord{Plan: json.RawMessage(`{"items":"x"}`), PlanSeq: 2}); err == nil {
		t.Error("storedPlan of a plan that is not a plan succeeded; want an error")
	}
}
