package lsp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// cancelBound is the bound from a cancel to the task's end.
const cancelBound = 200 * time.Millisecond

// TestCancelThreeRoutes: a task waiting on a slow model call after an
// edit is cancelled by $/cancelRequest, window/workDoneProgress/cancel and
// agentls.cancel. Each ends cancelled within 200 ms with a progress end,
// and no edit arrives after the end. The time is the best of up to three
// runs: a machine busy with other tests can stall one run's goroutines
// for longer than the bound, which says nothing about the cancel.
func TestCancelThreeRoutes(t *testing.T) {
	for _, route := range []string{"$/cancelRequest", "window/workDoneProgress/cancel", "agentls.cancel"} {
		t.Run(route, func(t *testing.T) {
			var times []time.Duration
			for run := 0; run < 3; run++ {
				took := cancelOnce(t, route)
				times = append(times, took)
				if took <= cancelBound || t.Failed() {
					break
				}
			}
			if best := slices.Min(times); best > cancelBound {
				t.Errorf("cancel to progress end took %v (runs: %v); want under %v", best, times, cancelBound)
			}
		})
	}
}

// cancelOnce runs one task, cancels it by route once its second model
// call waits, checks how it ended, and returns the time from the cancel
// to the progress end.
func cancelOnce(t *testing.T, route string) time.Duration {
	t.Helper()
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Delay: fakemodel.Duration(20 * time.Second),
			ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", `{"path":"a.go","old_string":"\"hi\"","new_string":"\"late\""}`)}},
	}, goFiles, lsptest.Config{WorkDoneProgress: true, ApplyEdit: true}, agentOpts{})
	a.open(t, "a.go")
	rctx, cancelReq := context.WithCancel(ctx(t))
	defer cancelReq()
	type result struct {
		raw json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, _, err := a.c.ExecuteCommand(rctx, lsp.CommandRun, map[string]any{"prompt": "make Foo say hi", "mode": "edit"})
		done <- result{raw, err}
	}()
	// Wait until the edit is applied and the second model call waits.
	a.c.Await(10*time.Second, "the first edit", func(s *lsptest.State) bool { return len(s.AppliedEdits) == 1 })
	if !waitFor(5*time.Second, func() bool { return len(a.model.Requests()) == 2 }) {
		t.Fatal("the second model call never came")
	}
	st := a.c.Snapshot()
	p := progressOf(&st, "agentls: make Foo say hi")
	if p == nil || p.Begin.Cancellable == nil || !*p.Begin.Cancellable {
		t.Fatalf("progress %+v; want a cancellable begin", p)
	}
	start := time.Now()
	switch route {
	case "$/cancelRequest":
		cancelReq() // protocol.Call sends $/cancelRequest
	case "window/workDoneProgress/cancel":
		if err := a.c.Notify(ctx(t), protocol.MethodWindowWorkDoneProgressCancel, &protocol.WorkDoneProgressCancelParams{Token: protocol.String(p.Token)}); err != nil {
			t.Fatal(err)
		}
	case "agentls.cancel":
		list := a.svc.TaskList()
		raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandCancel, map[string]string{"taskId": list[0].ID})
		if err != nil || !strings.Contains(string(raw), `"cancelled":true`) {
			t.Fatalf("agentls.cancel = %s, %v", raw, err)
		}
	}
	end := a.c.Await(5*time.Second, "progress end", func(s *lsptest.State) bool {
		return s.Progress[p.Token].Ended()
	})
	took := time.Since(start)
	t.Logf("%s: cancel to progress end in %v", route, took)
	if m := end.Progress[p.Token].End.Message; m == nil || !strings.HasPrefix(*m, "cancelled") {
		t.Errorf("progress end = %v; want cancelled", m)
	}
	if route != "$/cancelRequest" {
		r := <-done
		var reply lsp.RunReply
		if r.err != nil || json.Unmarshal(r.raw, &reply) != nil || reply.Status != "cancelled" || reply.StopReason != "cancelled" {
			t.Errorf("reply = %s, %v; want status cancelled", r.raw, r.err)
		}
	}
	// No edit after the end.
	time.Sleep(300 * time.Millisecond)
	after := a.c.Snapshot()
	if len(after.AppliedEdits) != 1 {
		t.Errorf("%d applyEdit requests; want only the one before the cancel", len(after.AppliedEdits))
	}
	if text, _, _ := a.c.Document(a.path("a.go")); strings.Contains(text, "late") {
		t.Errorf("an edit landed after the end: %q", text)
	}
	if list := a.svc.TaskList(); list[0].State != "cancelled" {
		t.Errorf("task state = %s", list[0].State)
	}
	return took
}
