package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// TestGuardBeforeStart: the host builds a task's tools on a guard before
// the task exists. Until Start binds it, the guard refuses every side
// effect; a warning raised while the tools are built (an MCP server that
// did not start) is shown in the task's progress once the task starts.
func TestGuardBeforeStart(t *testing.T) {
	g := NewGuard()
	if err := g.Check(context.Background()); !errors.Is(err, ErrNotExecuting) {
		t.Errorf("Check before the task starts = %v; want ErrNotExecuting", err)
	}
	if id, ch := g.TaskID(), g.Changes(); id != "" || ch != nil {
		t.Errorf("TaskID, Changes before start = %q, %v; want none", id, ch)
	}
	g.RecordChange("a.go", "x", "y") // nothing to record it in: ignored, not a panic
	g.Warn("MCP: server x did not start")
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task, err := Start(ctx, Config{Model: &scriptModel{resps: []*llm.Response{answer("done")}}, Guard: g}, TaskSpec{Prompt: "hi"}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if g.TaskID() != task.ID() {
		t.Errorf("guard's task = %q; want %q", g.TaskID(), task.ID())
	}
	var notes []string
	for _, e := range rec.all() {
		if e.Kind == EventNote {
			notes = append(notes, e.Text)
		}
	}
	if len(notes) != 1 || notes[0] != "MCP: server x did not start" {
		t.Errorf("notes = %q; want the warning raised before the start, once", notes)
	}
}

// TestRefusedStartClosesTools: a task Start refuses (no prompt, an unknown
// follow-up, a resume ID) never runs, so the tools built for it are closed
// at once through the guard's OnDone.
func TestRefusedStartClosesTools(t *testing.T) {
	for name, spec := range map[string]TaskSpec{
		"empty prompt":      {},
		"unknown follow-up": {Prompt: "more", FollowUp: "00000000-9"},
		"unknown kind":      {Prompt: "x", Kind: "dance"},
		"resume":            {ResumeID: "00000000-1"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewGuard()
			closed := 0
			g.OnDone(func() { closed++ })
			if _, err := Start(context.Background(), Config{Model: &scriptModel{}, Guard: g, Tools: []tools.Tool{planTool()}}, spec, nil); err == nil {
				t.Fatal("Start succeeded; want it refused")
			}
			if closed != 1 {
				t.Errorf("the guard's OnDone ran %d times; want once", closed)
			}
		})
	}
}
