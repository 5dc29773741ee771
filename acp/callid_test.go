package acp_test

import (
	"regexp"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestToolCallIdIsTheModelsCallID: the edit's tool call is shown under
// the id the model gave the call (the fake model's call_<request>_<n>),
// and its permission request, its diff and its end refer to that id.
func TestToolCallIdIsTheModelsCallID(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, _, id := connect(t, c)
	prompt(t, conn, id, "DISKEDIT: add a header")
	ups, perms := c.snapshot()
	var started []sdk.ToolCallId
	for _, u := range ups {
		if u.ToolCall != nil {
			started = append(started, u.ToolCall.ToolCallId)
		}
	}
	if len(started) != 1 || !regexp.MustCompile(`^call_\d+_0$`).MatchString(string(started[0])) {
		t.Fatalf("tool calls started %q; want one, under the model's call id", started)
	}
	call := started[0]
	if len(perms) != 1 || perms[0].ToolCall.ToolCallId != call {
		t.Fatalf("permission requests %+v; want one for %s", perms, call)
	}
	var diff, done bool
	for _, u := range ups {
		tu := u.ToolCallUpdate
		if tu == nil {
			continue
		}
		if tu.ToolCallId != call {
			t.Errorf("update for %s; want only %s", tu.ToolCallId, call)
		}
		for _, cc := range tu.Content {
			diff = diff || cc.Diff != nil
		}
		done = done || tu.Status != nil && *tu.Status == sdk.ToolCallStatusCompleted
	}
	if !diff || !done {
		t.Errorf("call %s: diff shown %v, completed %v; want both", call, diff, done)
	}
}
