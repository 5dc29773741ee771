package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTest(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func closeTest(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func flushTest(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFTS5CompiledIn(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	rows, err := s.r.Query("PRAGMA compile_options")
	must(t, err)
	defer rows.Close()
	var opts []string
	for rows.Next() {
		var o string
		must(t, rows.Scan(&o))
		opts = append(opts, o)
	}
	if !strings.Contains(strings.Join(opts, " "), "ENABLE_FTS5") {
		t.Fatalf("compile_options lack ENABLE_FTS5: %v", opts)
	}
}

func TestOpenSettings(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "dir", "agentls.db") // directories are created
	s := openTest(t, path)
	var mode string
	must(t, s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
	if mode != "wal" {
		t.Errorf("journal_mode = %q; want wal", mode)
	}
	var fk int
	must(t, s.w.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk))
	if fk != 1 {
		t.Errorf("writer foreign_keys = %d; want 1", fk)
	}
	if s.w.Stats().MaxOpenConnections != 1 {
		t.Errorf("writer MaxOpenConnections = %d; want 1", s.w.Stats().MaxOpenConnections)
	}
	// Readers cannot write.
	if _, err := s.r.ExecContext(ctx, "INSERT INTO sessions(id, created_at, updated_at) VALUES('x', 0, 0)"); err == nil {
		t.Error("a reader connection wrote to the database; want it read-only")
	}
}

// TestCloseDrainsEveryQueuedWrite enqueues many writes from several
// goroutines without flushing, closes, reopens and finds every one.
func TestCloseDrainsEveryQueuedWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	s, err := Open(ctx, path, Options{QueueSize: 64, MaxBatch: 32}) // small queue: back pressure is exercised
	must(t, err)
	const tasks, perTask = 4, 500
	for i := range tasks {
		must(t, s.CreateTask(Task{ID: fmt.Sprint("t", i), SessionID: "s", Prompt: "p", State: "executing"}))
	}
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("t", i)
			for q := range perTask {
				if err := s.AppendMessage(id, Message{Seq: q, Role: "user", Content: fmt.Sprintf("%s/%d", id, q)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.AppendMessage("t0", Message{Seq: 99999}); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendMessage after Close = %v; want ErrClosed", err)
	}

	s = openTest(t, path)
	for i := range tasks {
		id := fmt.Sprint("t", i)
		rec, err := s.LoadTask(ctx, id)
		must(t, err)
		if len(rec.Messages) != perTask {
			t.Fatalf("task %s has %d messages after reopen; want %d", id, len(rec.Messages), perTask)
		}
		for q, m := range rec.Messages {
			if want := fmt.Sprintf("%s/%d", id, q); m.Seq != q || m.Content != want {
				t.Fatalf("message %d = (%d, %q); want (%d, %q)", q, m.Seq, m.Content, q, want)
			}
		}
		if rec.NextSeq != perTask {
			t.Errorf("NextSeq = %d; want %d", rec.NextSeq, perTask)
		}
	}
}

func TestFlushReportsFailedWritesAndKeepsTheOthers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	must(t, s.CreateTask(Task{ID: "ok", Prompt: "p"}))
	must(t, s.AppendMessage("ok", Message{Seq: 0, Role: "user", Content: "before"}))
	must(t, s.AppendMessage("ghost", Message{Seq: 0, Role: "user", Content: "x"})) // no such task: FK
	must(t, s.SetTaskState("ghost", "executing"))
	must(t, s.AppendMessage("ok", Message{Seq: 1, Role: "user", Content: "after"}))
	err := s.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), "append message ghost/0") || !strings.Contains(err.Error(), "set state of task ghost") {
		t.Fatalf("Flush = %v; want errors naming the two failed writes", err)
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Flush = %v; want it to wrap ErrNotFound for the missing task", err)
	}
	rec, err := s.LoadTask(ctx, "ok")
	must(t, err)
	if len(rec.Messages) != 2 {
		t.Fatalf("task ok has %d messages; want 2 (a failed write must not take others with it)", len(rec.Messages))
	}
	if err := s.Flush(ctx); err != nil {
		t.Errorf("second Flush = %v; want nil (errors are reported once)", err)
	}
	if _, err := s.LoadTask(ctx, "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("LoadTask(ghost) = %v; want ErrNotFound", err)
	}
}

// TestTaskRecordSurvivesRestart writes a task as the loop would, closes,
// reopens and loads it for resume.
func TestTaskRecordSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	t0 := time.UnixMilli(1_800_000_000_000)
	s := openTest(t, path)
	ec := json.RawMessage(`{"uri":"file:///w/main.go","range":{"start":{"line":1,"character":0}}}`)
	must(t, s.CreateTask(Task{ID: "T1", SessionID: "S1", Kind: "edit", Prompt: "rename Foo to Bar", EditorContext: ec, CreatedAt: t0}))
	must(t, s.SetTaskState("T1", "executing"))
	msgs := []Message{
		{Seq: 0, Role: "system", Content: "system"},
		{Seq: 1, Role: "user", Content: "rename Foo to Bar"},
		{Seq: 2, Role: "assistant", Content: "cut", ToolCalls: []CallRequest{{ID: "c0", Name: "grep", Arguments: `{"pat`, Incomplete: true}},
			ModelCall: true, Usage: Usage{InputTokens: 100, OutputTokens: 4096}, Duration: 3 * time.Second, Excluded: true, ExcludedReason: ExcludedTruncated},
		{Seq: 3, Role: "assistant", Reasoning: "look first", ToolCalls: []CallRequest{{ID: "c1", Name: "grep", Arguments: `{"pattern":"Foo"}`}},
			ModelCall: true, Usage: Usage{InputTokens: 150, OutputTokens: 20, CachedTokens: 100}, Duration: time.Second},
		{Seq: 4, Role: "tool", ToolCallID: "c1", Name: "grep", Content: "main.go:3: func Foo()"},
	}
	for _, m := range msgs {
		must(t, s.AppendMessage("T1", m))
	}
	must(t, s.RecordToolCall("T1", ToolCall{CallID: "c1", Name: "grep", Args: json.RawMessage(`{"pattern":"Foo"}`), Summary: "main.go:3: func Foo()", Duration: 12 * time.Millisecond}))
	must(t, s.RecordPlan("T1", PlanUpdate{Plan: json.RawMessage(`{"items":[{"id":"1","text":"find Foo","status":"in_progress"}]}`), Open: 1}))
	lastPlan := `{"items":[{"id":"1","text":"find Foo","status":"done"},{"id":"2","text":"rename","status":"pending"}]}`
	must(t, s.RecordPlan("T1", PlanUpdate{Plan: json.RawMessage(lastPlan), Open: 1}))
	must(t, s.RecordEdit("T1", Edit{Path: "main.go", Before: "func Foo()\n", After: "func Bar()\n"}))
	must(t, s.RecordApproval("T1", Approval{Tool: "run_command", Decision: DecisionAllowAlways, Command: "go test ./...", Prefix: "go test"}))
	closeTest(t, s)

	s = openTest(t, path)
	// Replaying writes after a restart does not duplicate them nor count them twice.
	must(t, s.CreateTask(Task{ID: "T1", SessionID: "S1", Prompt: "changed"}))
	must(t, s.AppendMessage("T1", Message{Seq: 3, Role: "assistant", Content: "replayed", ModelCall: true, Usage: Usage{InputTokens: 999}}))
	must(t, s.RecordToolCall("T1", ToolCall{CallID: "c1", Name: "grep", Duration: time.Hour}))
	must(t, s.Flush(ctx))

	in, err := s.Interrupted(ctx)
	must(t, err)
	if len(in) != 1 || in[0].ID != "T1" || in[0].State != "executing" {
		t.Fatalf("Interrupted = %+v; want T1 executing", in)
	}
	rec, err := s.LoadTask(ctx, "T1")
	must(t, err)
	if rec.Prompt != "rename Foo to Bar" || rec.SessionID != "S1" || rec.Kind != "edit" || string(rec.EditorContext) != string(ec) || !rec.CreatedAt.Equal(t0) {
		t.Errorf("task = %+v; want the fields written first", rec.Task)
	}
	if len(rec.Messages) != len(msgs) || rec.NextSeq != 5 {
		t.Fatalf("got %d messages, NextSeq %d; want %d, 5", len(rec.Messages), rec.NextSeq, len(msgs))
	}
	for i, m := range rec.Messages {
		w := msgs[i]
		gotCalls, _ := json.Marshal(m.ToolCalls)
		wantCalls, _ := json.Marshal(w.ToolCalls)
		if m.Seq != w.Seq || m.Role != w.Role || m.Content != w.Content || m.Reasoning != w.Reasoning || m.ToolCallID != w.ToolCallID ||
			m.Name != w.Name || string(gotCalls) != string(wantCalls) || m.Usage != w.Usage || m.Duration != w.Duration ||
			m.Excluded != w.Excluded || m.ExcludedReason != w.ExcludedReason || m.ModelCall != w.ModelCall {
			t.Errorf("message %d = %+v; want %+v", i, m, w)
		}
	}
	if ctxMsgs := rec.Context(); len(ctxMsgs) != 4 || ctxMsgs[2].ToolCalls[0].ID != "c1" {
		t.Errorf("Context() = %+v; want the 4 messages not excluded", ctxMsgs)
	}
	if rec.LLMCalls != 2 || rec.Usage != (Usage{InputTokens: 250, OutputTokens: 4116, CachedTokens: 100}) || rec.ModelTime != 4*time.Second || rec.ToolTime != 12*time.Millisecond {
		t.Errorf("totals = calls %d usage %+v model %v tool %v; want 2, {250 4116 100}, 4s, 12ms", rec.LLMCalls, rec.Usage, rec.ModelTime, rec.ToolTime)
	}
	if rec.Plan == nil || rec.PlanSeq != 2 || string(rec.Plan) != lastPlan {
		t.Errorf("plan = %s (seq %d); want the second update", rec.Plan, rec.PlanSeq)
	}
	if len(rec.Edits) != 1 || rec.Edits[0].After != "func Bar()\n" || rec.Edits[0].Seq != 1 {
		t.Errorf("edits = %+v", rec.Edits)
	}
	if len(rec.ToolCalls) != 1 || rec.ToolCalls[0].Duration != 12*time.Millisecond || string(rec.ToolCalls[0].Args) != `{"pattern":"Foo"}` {
		t.Errorf("tool calls = %+v", rec.ToolCalls)
	}
	if len(rec.Approvals) != 1 || rec.Approvals[0].Decision != DecisionAllowAlways || rec.Approvals[0].Prefix != "go test" {
		t.Errorf("approvals = %+v", rec.Approvals)
	}

	// Compaction: earlier turns excluded, then the summary appended.
	must(t, s.ExcludeMessages("T1", ExcludedCompacted, 3, 4))
	must(t, s.AppendMessage("T1", Message{Seq: 5, Role: "user", Content: "summary of turns 3-4"}))
	must(t, s.FinishTask("T1", TaskEnd{State: StateCompleted, StopReason: "answered", Answer: "renamed", Summary: "Foo -> Bar"}))
	if err := s.FinishTask("T1", TaskEnd{State: "executing"}); err == nil {
		t.Error("FinishTask with a live state succeeded; want an error")
	}
	rec, err = s.LoadTask(ctx, "T1")
	must(t, err)
	if got := len(rec.Context()); got != 3 || rec.Messages[3].ExcludedReason != ExcludedCompacted {
		t.Errorf("after compaction Context() has %d messages (reason %q); want 3, compacted", got, rec.Messages[3].ExcludedReason)
	}
	if rec.State != StateCompleted || rec.Answer != "renamed" || rec.EndedAt.IsZero() {
		t.Errorf("finished task = %+v", rec.Task)
	}
	if in, _ := s.Interrupted(ctx); len(in) != 0 {
		t.Errorf("Interrupted after finish = %+v; want none", in)
	}
}

// TestSessionTasksAcrossRestart: a follow-up in a new process finds the
// previous task of its session and its answer.
func TestSessionTasksAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	s := openTest(t, path)
	must(t, s.CreateSession(Session{ID: "S", Title: "count lines"}))
	must(t, s.CreateTask(Task{ID: "A", SessionID: "S", Prompt: "how many lines in main.go", CreatedAt: time.UnixMilli(1000)}))
	must(t, s.FinishTask("A", TaskEnd{State: StateCompleted, Answer: "42 words"}))
	closeTest(t, s)

	s = openTest(t, path)
	must(t, s.CreateTask(Task{ID: "B", SessionID: "S", Prompt: "wrong, use wc -l", FollowUpOf: "A", CreatedAt: time.UnixMilli(2000)}))
	ts, err := s.SessionTasks(ctx, "S")
	must(t, err)
	if len(ts) != 2 || ts[0].ID != "A" || ts[0].Answer != "42 words" || ts[1].FollowUpOf != "A" {
		t.Fatalf("SessionTasks = %+v; want A (with its answer) then B following A", ts)
	}
	ss, err := s.Sessions(ctx, 0)
	must(t, err)
	if len(ss) != 1 || ss[0].Title != "count lines" {
		t.Errorf("Sessions = %+v", ss)
	}
}

func TestTasksFilter(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	for i, st := range []string{"completed", "failed", "executing", "completed", "cancelled"} {
		id := fmt.Sprint("t", i)
		sess := "s1"
		if i >= 3 {
			sess = "s2"
		}
		must(t, s.CreateTask(Task{ID: id, SessionID: sess, CreatedAt: time.UnixMilli(int64(1000 * (i + 1)))}))
		if Terminal(st) {
			must(t, s.FinishTask(id, TaskEnd{State: st}))
		} else {
			must(t, s.SetTaskState(id, st))
		}
	}
	ids := func(ts []Task) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name string
		f    TaskFilter
		want string
	}{
		{"all newest first", TaskFilter{}, "t4,t3,t2,t1,t0"},
		{"state", TaskFilter{States: []string{"completed"}}, "t3,t0"},
		{"states", TaskFilter{States: []string{"failed", "cancelled"}}, "t4,t1"},
		{"live", TaskFilter{Live: true}, "t2"},
		{"since", TaskFilter{Since: time.UnixMilli(3000)}, "t4,t3,t2"},
		{"session", TaskFilter{SessionID: "s2"}, "t4,t3"},
		{"limit", TaskFilter{Limit: 2}, "t4,t3"},
		{"combined", TaskFilter{States: []string{"completed"}, Since: time.UnixMilli(2000)}, "t3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := s.Tasks(ctx, tc.f)
			must(t, err)
			if got := ids(ts); got != tc.want {
				t.Errorf("Tasks(%+v) = %s; want %s", tc.f, got, tc.want)
			}
		})
	}
}

func TestHeadTail(t *testing.T) {
	long := strings.Repeat("é", 3000) + "RESULT"
	got := headTail(long, 100)
	if len(got) > 140 || !strings.HasSuffix(got, "RESULT") || !strings.Contains(got, "bytes cut") {
		t.Errorf("headTail kept %d bytes: %q", len(got), got)
	}
	if !json.Valid([]byte(fmt.Sprintf("%q", got))) {
		t.Error("headTail broke UTF-8")
	}
	if headTail("short", 100) != "short" {
		t.Error("headTail changed a short text")
	}
}

// TestDeleteSessionRemovesItsTasksAndTheirRecords: a deleted session is
// gone from Sessions with its tasks and their messages; the other session
// and its tasks stay.
func TestDeleteSessionRemovesItsTasksAndTheirRecords(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "agentls.db"))
	for _, id := range []string{"S1", "S2"} {
		must(t, s.CreateSession(Session{ID: id, Title: "title " + id}))
		must(t, s.CreateTask(Task{ID: "task-" + id, SessionID: id, Prompt: "prompt " + id}))
		must(t, s.AppendMessage("task-"+id, Message{Seq: 1, Role: "user", Content: "prompt " + id}))
	}
	flushTest(t, s)
	must(t, s.DeleteSession("S1"))
	must(t, s.DeleteSession("no-such-session"))
	flushTest(t, s)
	ss, err := s.Sessions(ctx, 0)
	must(t, err)
	if len(ss) != 1 || ss[0].ID != "S2" {
		t.Fatalf("Sessions after delete = %+v; want only S2", ss)
	}
	if ts, err := s.SessionTasks(ctx, "S1"); err != nil || len(ts) != 0 {
		t.Errorf("tasks of the deleted session: %+v, %v", ts, err)
	}
	var n int
	must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE task_id = 'task-S1'`).Scan(&n))
	if n != 0 {
		t.Errorf("%d messages of the deleted session's task are left", n)
	}
	if ts, err := s.SessionTasks(ctx, "S2"); err != nil || len(ts) != 1 {
		t.Errorf("tasks of the other session: %+v, %v", ts, err)
	}
}
