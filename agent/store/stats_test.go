package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// seedStats writes four tasks with model calls and tool calls whose
// percentiles are known.
func seedStats(t testing.TB, s *Store) {
	t.Helper()
	ends := []string{StateCompleted, StateCompleted, StateFailed, ""} // the last one stays live
	for i, end := range ends {
		id := fmt.Sprint("t", i)
		must(t, s.CreateTask(Task{ID: id, SessionID: "s", Prompt: "p", CreatedAt: time.UnixMilli(int64(1000 * (i + 1)))}))
		for c := range i + 1 { // 1+2+3+4 = 10 model calls
			must(t, s.AppendMessage(id, Message{Seq: c, Role: "assistant", ModelCall: true,
				Usage: Usage{InputTokens: 100, OutputTokens: 10, CachedTokens: 50}, Duration: time.Second}))
		}
		if end != "" {
			must(t, s.FinishTask(id, TaskEnd{State: end}))
		}
	}
	// read_file: 20 calls of 1..20 ms -> median 10 ms, p95 19 ms (nearest rank).
	for k := 1; k <= 20; k++ {
		must(t, s.RecordToolCall("t0", ToolCall{CallID: fmt.Sprint("r", k), Name: "read_file", Duration: time.Duration(k) * time.Millisecond}))
	}
	// run_command: 3 calls of 100, 200, 3000 ms, one error -> median 200, p95 3000.
	for k, d := range []int{3000, 100, 200} {
		must(t, s.RecordToolCall("t1", ToolCall{CallID: fmt.Sprint("c", k), Name: "run_command", Duration: time.Duration(d) * time.Millisecond, IsError: k == 0}))
	}
	must(t, s.RecordToolCall("t3", ToolCall{CallID: "g", Name: "grep", Duration: 50 * time.Millisecond}))
}

// TestStatsSurviveRestart computes statistics, closes, reopens and gets
// the same figures from the database.
func TestStatsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	s := openTest(t, path)
	seedStats(t, s)
	first, err := s.Stats(ctx, time.Time{}, 0)
	must(t, err)
	closeTest(t, s)

	s = openTest(t, path)
	st, err := s.Stats(ctx, time.Time{}, 2)
	must(t, err)
	if st.Tasks != 4 || st.Completed != 2 || st.Failed != 1 || st.Live != 1 || st.CompletionRate != 2.0/3 {
		t.Errorf("task counts = %+v", st)
	}
	if st.ModelCalls != 10 || st.CallsPerTask != 2.5 || st.InputTokens != 1000 || st.OutputTokens != 100 || st.CachedTokens != 500 || st.TokensPerTask != 275 {
		t.Errorf("model figures = calls %d (%.2f/task), tokens %d/%d/%d (%.1f/task)", st.ModelCalls, st.CallsPerTask, st.InputTokens, st.OutputTokens, st.CachedTokens, st.TokensPerTask)
	}
	if time.Duration(st.ModelTime) != 10*time.Second || st.ToolCalls != 24 {
		t.Errorf("model time %v, tool calls %d; want 10s, 24", time.Duration(st.ModelTime), st.ToolCalls)
	}
	ms := func(n int) Millis { return Millis(time.Duration(n) * time.Millisecond) }
	if len(st.MostUsedTools) != 2 || st.MostUsedTools[0].Name != "read_file" || st.MostUsedTools[0].Calls != 20 ||
		st.MostUsedTools[0].Median != ms(10) || st.MostUsedTools[0].P95 != ms(19) || st.MostUsedTools[1].Name != "run_command" {
		t.Errorf("most used = %+v; want read_file (20, median 10ms, p95 19ms) then run_command", st.MostUsedTools)
	}
	if len(st.SlowestTools) != 2 || st.SlowestTools[0].Name != "run_command" || st.SlowestTools[0].Median != ms(200) ||
		st.SlowestTools[0].P95 != ms(3000) || st.SlowestTools[0].Errors != 1 || st.SlowestTools[1].Name != "grep" {
		t.Errorf("slowest = %+v; want run_command (median 200ms, p95 3s, 1 error) then grep", st.SlowestTools)
	}
	first.MostUsedTools, first.SlowestTools = first.MostUsedTools[:2], first.SlowestTools[:2]
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(st)
	if string(a) != string(b) {
		t.Errorf("stats changed across a restart:\n%s\n%s", a, b)
	}

	since, err := s.Stats(ctx, time.UnixMilli(3000), 0)
	must(t, err)
	if since.Tasks != 2 || since.ModelCalls != 7 || len(since.MostUsedTools) != 1 || since.MostUsedTools[0].Name != "grep" {
		t.Errorf("Stats(since) = %+v; want tasks t2, t3 only", since)
	}
}

func TestStatsEmpty(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	st, err := s.Stats(context.Background(), time.Time{}, 0)
	must(t, err)
	b, err := json.Marshal(st)
	must(t, err)
	if st.Tasks != 0 || st.CompletionRate != 0 || st.MostUsedTools == nil {
		t.Errorf("empty stats = %s", b)
	}
}
