package lsp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// cmdWork runs a progress-tracked task: begin (cancellable), n reports,
// then end, or "cancelled" when the work is cancelled.
type workArgs struct {
	Reports int  `json:"reports"`
	Wait    bool `json:"wait"` // wait to be cancelled after the reports
}

var cmdWork = &server.Command[workArgs, any]{
	Name: "test.work",
	Run: func(ctx context.Context, inv *server.Invocation, a workArgs) (any, error) {
		work, cancel := context.WithCancel(ctx)
		defer cancel()
		wd := inv.Server.Progress().Start(ctx, inv.WorkDoneToken, "agentls: test work", "starting", cancel)
		for i := 1; i <= a.Reports; i++ {
			wd.Report(fmt.Sprintf("step %d", i), i*100/a.Reports)
		}
		if a.Wait {
			<-work.Done()
			wd.End("cancelled")
			return "cancelled", nil
		}
		wd.End("done")
		return "done", nil
	},
}

func TestProgressWithCreatedToken(t *testing.T) {
	s := initialized(t, lsptest.Config{WorkDoneProgress: true}, server.WithCommands(cmdWork))
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.work", workArgs{Reports: 3}); err != nil {
		t.Fatal(err)
	}
	st := s.c.Snapshot()
	if st.CreateRequests != 1 || len(st.ProgressOrder) != 1 {
		t.Fatalf("create requests = %d, tokens = %v; want one created token", st.CreateRequests, st.ProgressOrder)
	}
	rec := st.Progress[st.ProgressOrder[0]]
	if rec.Begin == nil || rec.Begin.Title != "agentls: test work" || rec.Begin.Cancellable == nil || !*rec.Begin.Cancellable {
		t.Errorf("begin = %+v; want a cancellable begin with the title", rec.Begin)
	}
	if !rec.Ended() || *rec.End.Message != "done" {
		t.Errorf("end = %+v; want done (sent before the reply)", rec.End)
	}
	if n := len(rec.Reports); n == 0 || *rec.Reports[n-1].Message != "step 3" || *rec.Reports[n-1].Percentage != 100 {
		t.Errorf("reports = %d, last %+v; want the last state (step 3, 100%%) kept", n, rec.Reports)
	}
	if len(st.ShowMessages) != 0 {
		t.Errorf("showMessage sent although progress works: %v", st.ShowMessages)
	}
}

func TestProgressUsesClientToken(t *testing.T) {
	s := initialized(t, lsptest.Config{WorkDoneProgress: true, SendWorkDoneToken: true}, server.WithCommands(cmdWork))
	_, token, err := s.c.ExecuteCommand(ctx(t), "test.work", workArgs{Reports: 1})
	if err != nil {
		t.Fatal(err)
	}
	st := s.c.Snapshot()
	if st.CreateRequests != 0 {
		t.Errorf("server created %d tokens; want it to use the client's", st.CreateRequests)
	}
	if rec := st.Progress[token]; !rec.Ended() {
		t.Errorf("progress on the client token %q = %+v; want begin..end", token, rec)
	}
}

// TestProgressFallback: clients without work-done progress, or that never
// answer window/workDoneProgress/create (ALE), get window/showMessage at
// begin and end (CLIENTS.md).
func TestProgressFallback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     lsptest.Config
		minWait time.Duration
	}{
		{"no capability", lsptest.Config{}, 0},
		{"create fails", lsptest.Config{WorkDoneProgress: true, Create: lsptest.CreateFail}, 0},
		{"create never answered", lsptest.Config{WorkDoneProgress: true, Create: lsptest.CreateIgnore}, 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := initialized(t, tc.cfg, server.WithCommands(cmdWork))
			start := time.Now()
			if _, _, err := s.c.ExecuteCommand(ctx(t), "test.work", workArgs{Reports: 2}); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			st := s.c.Snapshot()
			if len(st.Progress) != 0 {
				t.Errorf("$/progress sent: %v", st.ProgressOrder)
			}
			if !st.HasShowMessage("agentls: test work: starting") || !st.HasShowMessage("agentls: test work: done") {
				t.Errorf("showMessages = %+v; want begin and end", st.ShowMessages)
			}
			if took < tc.minWait || took > tc.minWait+2*time.Second {
				t.Errorf("command took %v; want the create wait bounded near %v", took, tc.minWait)
			}
		})
	}
}

func TestProgressCancel(t *testing.T) {
	s := initialized(t, lsptest.Config{WorkDoneProgress: true}, server.WithCommands(cmdWork))
	done := make(chan error, 1)
	go func() {
		_, _, err := s.c.ExecuteCommand(context.Background(), "test.work", workArgs{Reports: 1, Wait: true})
		done <- err
	}()
	st := s.c.Await(5*time.Second, "progress begin", func(st *lsptest.State) bool { return len(st.ProgressOrder) == 1 })
	token := st.ProgressOrder[0]
	if err := s.c.Notify(ctx(t), protocol.MethodWindowWorkDoneProgressCancel, &protocol.WorkDoneProgressCancelParams{Token: protocol.String(token)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("window/workDoneProgress/cancel did not cancel the work")
	}
	if rec := s.c.Snapshot().Progress[token]; !rec.Ended() || *rec.End.Message != "cancelled" {
		t.Errorf("end = %+v; want cancelled", rec)
	}
}

// TestProgressThrottle: 200 reports in a burst reach the client at no more
// than 10 a second, and the last one is never lost.
func TestProgressThrottle(t *testing.T) {
	s := initialized(t, lsptest.Config{WorkDoneProgress: true}, server.WithCommands(cmdWork))
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.work", workArgs{Reports: 200}); err != nil {
		t.Fatal(err)
	}
	st := s.c.Snapshot()
	rec := st.Progress[st.ProgressOrder[0]]
	if n := len(rec.Reports); n < 1 || n > 3 {
		t.Errorf("%d reports reached the client; want the burst coalesced (1-3)", n)
	}
	if last := rec.Reports[len(rec.Reports)-1]; *last.Message != "step 200" {
		t.Errorf("last report = %q; want step 200", *last.Message)
	}
	for i := 1; i < len(rec.ReportTimes); i++ {
		// Arrival times can bunch by a little scheduling jitter; sending is
		// spaced by server.ReportInterval.
		if gap := rec.ReportTimes[i].Sub(rec.ReportTimes[i-1]); gap < server.ReportInterval-20*time.Millisecond {
			t.Errorf("reports %d and %d arrived %v apart; want >= %v", i-1, i, gap, server.ReportInterval)
		}
	}
}

// TestProgressThrottleSpread: reports spread over ~600 ms keep the rate and
// end with the last state.
func TestProgressThrottleSpread(t *testing.T) {
	slow := &server.Command[struct{}, any]{Name: "test.slowwork", Run: func(ctx context.Context, inv *server.Invocation, _ struct{}) (any, error) {
		wd := inv.Server.Progress().Start(ctx, inv.WorkDoneToken, "spread", "", nil)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 1; i <= 60; i++ {
			<-tick.C
			wd.Report(fmt.Sprintf("item %d", i), -1)
		}
		wd.End("ok")
		return nil, nil
	}}
	s := initialized(t, lsptest.Config{WorkDoneProgress: true}, server.WithCommands(slow))
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.slowwork", nil); err != nil {
		t.Fatal(err)
	}
	st := s.c.Snapshot()
	rec := st.Progress[st.ProgressOrder[0]]
	first, last := rec.ReportTimes[0], rec.ReportTimes[len(rec.ReportTimes)-1]
	if rate := float64(len(rec.Reports)-1) / last.Sub(first).Seconds(); len(rec.Reports) > 1 && rate > 11 {
		t.Errorf("%d reports in %v: %.1f/s; want <= 10/s", len(rec.Reports), last.Sub(first), rate)
	}
	if got := *rec.Reports[len(rec.Reports)-1].Message; got != "item 60" {
		t.Errorf("last report = %q; want item 60", got)
	}
	if rec.Begin.Cancellable != nil {
		t.Errorf("work without a cancel function is shown cancellable")
	}
}

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
