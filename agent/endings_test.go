package agent

import (
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
)

// TestRepeatedDoneDoesNotCompleteABrokenBuild: a model that breaks the
// build and then says "Done." twice does not complete the task on the
// repeat: the repeated answer passes the check command like any answer.
func TestRepeatedDoneDoesNotCompleteABrokenBuild(t *testing.T) {
	toolsOf, check := breaksTheBuild(t)
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("edit_file", `{}`)),
		answer("Done."), answer("Done."), answer("never reached"),
	}}
	cfg := Config{Validate: ValidateOff, CheckRounds: 5, Check: check}
	res, _ := runTask(t, cfg, m, toolsOf, TaskSpec{Kind: KindEdit, Prompt: "p"})
	if res.Status != StateFailed || res.StopReason != StopCheckFailed || res.ModelCalls != 3 {
		t.Fatalf("%s/%s after %d calls (%s); want failed/check_failed after 3", res.Status, res.StopReason, res.ModelCalls, res.Error)
	}
}

// TestEditClaimedButNeverMadeIsAskedOnceThenReported: an edit task whose
// model says it changed something while no file changed is asked once;
// when it still changes nothing, the task completes and its result and
// report say plainly that no file was changed.
func TestEditClaimedButNeverMadeIsAskedOnceThenReported(t *testing.T) {
	m := &scriptModel{resps: []*llm.Response{
		answer("I updated Foo to return hi."),
		answer("On reflection Foo already returns hi; nothing to do."),
		answer("never reached"),
	}}
	res, _ := runTask(t, Config{Validate: ValidateOff}, m, staticTools(textTool("read_file", true, "x")), TaskSpec{Kind: KindEdit, Prompt: "make Foo say hi"})
	if res.Status != StateCompleted || res.ModelCalls != 2 {
		t.Fatalf("%s/%s after %d calls; want completed after 2 (one question)", res.Status, res.StopReason, res.ModelCalls)
	}
	if last := m.requests()[1].Messages; !strings.Contains(last[len(last)-1].Content, "No file was changed in this task") {
		t.Errorf("the model was not asked about the change it claimed: %q", last[len(last)-1].Content)
	}
	if !strings.Contains(res.Report(), "No file was changed by this task.") {
		t.Errorf("report does not say no file changed:\n%s", res.Report())
	}
}

// TestEditWithNoChangeClaimIsNotAsked: an edit task that says plainly that
// nothing needed changing is not asked again (no extra model call).
func TestEditWithNoChangeClaimIsNotAsked(t *testing.T) {
	m := &scriptModel{resps: []*llm.Response{answer("Foo already returns hi; nothing needs changing.")}}
	res, _ := runTask(t, Config{Validate: ValidateOff}, m, staticTools(textTool("read_file", true, "x")), TaskSpec{Kind: KindEdit, Prompt: "make Foo say hi"})
	if res.Status != StateCompleted || res.ModelCalls != 1 {
		t.Fatalf("%s/%s after %d calls; want completed after 1", res.Status, res.StopReason, res.ModelCalls)
	}
}
