package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	flightrec "github.com/agentls/agentls/agent/llm/recorder"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// openStore opens the session store at path and closes it when the test ends.
func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// testWorkspace writes files into a new temporary workspace.
func testWorkspace(t *testing.T, files map[string]string) (string, *workspace.Workspace) {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, mustWorkspace(t, root)
}

// mustWorkspace opens the workspace at root until the test ends.
func mustWorkspace(t *testing.T, root string) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// approveAll approves everything and lets the test see the requests.
type approveAll struct{}

func (approveAll) Approve(context.Context, tools.ApprovalRequest) (tools.Decision, error) {
	return tools.AllowOnce, nil
}

func realTools(ws *workspace.Workspace, a tools.Approver) toolSet {
	return func(g *Guard) []tools.Tool {
		reg := tools.New(tools.Env{Workspace: ws, Editor: g.Editor(ws, ws.DiskEditor()), Approver: g.Approver(a)})
		g.OnDone(func() { reg.Close() })
		return reg.Tools()
	}
}

// TestTaskIsPersistedRowByRow runs an edit task with a plan, a read, a
// write (approved) and an answer, and checks every row the store holds,
// read through a second connection opened after the task ended without any
// flush by the test (the task's end drained its writes).
func TestTaskIsPersistedRowByRow(t *testing.T) {
	root, ws := testWorkspace(t, map[string]string{"a.txt": "one\n"})
	dbPath := filepath.Join(root, ".agentls", "agentls.db")
	st := openStore(t, dbPath)
	plan := `{"items":[{"id":"1","text":"change a.txt","status":"done"}]}`
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("update_plan", plan), call("read_file", `{"path":"a.txt"}`)),
		calls("", call("write_file", `{"path":"a.txt","content":"two\n"}`)),
		answer("a.txt now says two."),
	}}
	r := newRunner(st, Config{Root: root, Validate: ValidateOff}, m, realTools(ws, approveAll{}))
	res, err := r.Run(context.Background(), TaskSpec{Kind: KindEdit, Prompt: "make a.txt say two", Context: EditorContext{File: "a.txt"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s): %s", res.Status, res.StopReason, res.Error)
	}

	// A second store on the same file sees everything: nothing was left queued.
	other := openStore(t, dbPath)
	rec, err := other.LoadTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != store.StateCompleted || rec.StopReason != string(StopAnswered) || rec.Answer != "a.txt now says two." || rec.EndedAt.IsZero() {
		t.Errorf("task row: state %q stop %q answer %q ended %v", rec.State, rec.StopReason, rec.Answer, rec.EndedAt)
	}
	if rec.Kind != "edit" || rec.Prompt != "make a.txt say two" || !strings.Contains(string(rec.EditorContext), `"file":"a.txt"`) {
		t.Errorf("task row: kind %q prompt %q context %s", rec.Kind, rec.Prompt, rec.EditorContext)
	}
	if rec.LLMCalls != 3 || rec.Usage.InputTokens != 300 || rec.Usage.OutputTokens != 30 || rec.ModelTime != 3*time.Millisecond {
		t.Errorf("totals: calls %d usage %+v model %s; want 3 calls, 300/30 tokens, 3ms", rec.LLMCalls, rec.Usage, rec.ModelTime)
	}
	type row struct {
		role      llm.Role
		modelCall bool
		calls     int
		tool      string
	}
	want := []row{
		{llm.RoleSystem, false, 0, ""},
		{llm.RoleUser, false, 0, ""},
		{llm.RoleAssistant, true, 2, ""},
		{llm.RoleTool, false, 0, "update_plan"},
		{llm.RoleTool, false, 0, "read_file"},
		{llm.RoleAssistant, true, 1, ""},
		{llm.RoleTool, false, 0, "write_file"},
		{llm.RoleAssistant, true, 0, ""},
	}
	if len(rec.Messages) != len(want) {
		t.Fatalf("%d messages stored; want %d: %+v", len(rec.Messages), len(want), rec.Messages)
	}
	hist := r.Task(res.TaskID).History()
	for i, w := range want {
		m := rec.Messages[i]
		if m.Seq != i || m.Role != string(w.role) || m.ModelCall != w.modelCall || len(m.ToolCalls) != w.calls || m.Name != w.tool || m.Excluded {
			t.Errorf("message %d: seq %d role %s modelCall %v calls %d name %q excluded %v; want %+v",
				i, m.Seq, m.Role, m.ModelCall, len(m.ToolCalls), m.Name, m.Excluded, w)
		}
		if m.ModelCall && (m.Usage.InputTokens != 100 || m.Duration != time.Millisecond) {
			t.Errorf("message %d: usage %+v duration %s", i, m.Usage, m.Duration)
		}
		if m.Content != hist[i].Content {
			t.Errorf("message %d content %q; history has %q", i, m.Content, hist[i].Content)
		}
	}
	if rec.NextSeq != len(want) {
		t.Errorf("NextSeq %d; want %d", rec.NextSeq, len(want))
	}
	if plan, err := journal.StoredPlan(rec); err != nil || plan == nil || rec.PlanSeq != 1 || plan.Items[0].Text != "change a.txt" {
		t.Errorf("plan %s (%d updates): %v", rec.Plan, rec.PlanSeq, err)
	}
	var names []string
	for _, c := range rec.ToolCalls {
		names = append(names, c.Name)
		if c.CallID == "" || len(c.Args) == 0 || c.Summary == "" {
			t.Errorf("tool call %+v lacks id, args or summary", c)
		}
	}
	if got := strings.Join(names, ","); got != "update_plan,read_file,write_file" {
		t.Errorf("tool calls %s", got)
	}
	if len(rec.Edits) != 1 || rec.Edits[0].Path != "a.txt" || rec.Edits[0].Before != "one\n" || rec.Edits[0].After != "two\n" {
		t.Errorf("edits %+v", rec.Edits)
	}
	if len(rec.Approvals) != 1 || rec.Approvals[0].Tool != "write_file" || rec.Approvals[0].Decision != store.DecisionAllowOnce || rec.Approvals[0].Path != "a.txt" {
		t.Errorf("approvals %+v", rec.Approvals)
	}
	if ctxMsgs := journal.StoredHistory(rec); ValidHistory(ctxMsgs) != "" {
		t.Errorf("stored context is not a valid history: %s", ValidHistory(ctxMsgs))
	}
}

// TestTruncatedResponseIsStoredExcluded: a response cut at max_tokens
// counts as a model call in the store but is excluded from the context.
func TestTruncatedResponseIsStoredExcluded(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	cut := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "half an ans"}, FinishReason: llm.FinishLength}
	m := &scriptModel{resps: []*llm.Response{cut, answer("whole answer")}}
	r := newRunner(st, Config{}, m, staticTools())
	res, _ := r.Run(context.Background(), TaskSpec{Prompt: "say something"}, nil)
	rec, err := st.LoadTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.LLMCalls != 2 {
		t.Errorf("LLM calls %d; want 2", rec.LLMCalls)
	}
	var got []string
	for _, m := range rec.Messages {
		got = append(got, string(m.Role)+":"+m.ExcludedReason)
	}
	if strings.Join(got, " ") != "system: user: assistant:truncated user: assistant:" {
		t.Errorf("messages %v", got)
	}
	if ValidHistory(journal.StoredHistory(rec)) != "" || len(journal.StoredHistory(rec)) != 4 {
		t.Errorf("context %+v", journal.StoredHistory(rec))
	}
}

// TestFollowUpAcrossStoreReopen: a follow-up names a task of an earlier
// run (the store closed and reopened, a new runner): it sees that task's
// prompt and answer and joins its session.
func TestFollowUpAcrossStoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &scriptModel{resps: []*llm.Response{answer("There are 42 lines in main.go.")}}
	first, _ := newRunner(st, Config{}, m, staticTools()).Run(context.Background(), TaskSpec{Prompt: "count the lines of main.go"}, nil)
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, path)
	m2 := &scriptModel{resps: []*llm.Response{answer("Without blank lines: 30.")}}
	r2 := newRunner(st2, Config{}, m2, staticTools())
	task, err := r2.Start(context.Background(), TaskSpec{Prompt: "wrong, don't count blank lines", FollowUp: first.TaskID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-task.Done()
	msg := m2.requests()[0].Messages[1].Content
	for _, want := range []string{"count the lines of main.go", "There are 42 lines in main.go.", "wrong, don't count blank lines"} {
		if !strings.Contains(msg, want) {
			t.Errorf("follow-up task message lacks %q:\n%s", want, msg)
		}
	}
	row, err := st2.Task(context.Background(), task.ID())
	if err != nil {
		t.Fatal(err)
	}
	if row.FollowUpOf != first.TaskID || row.SessionID != first.TaskID || task.SessionID() != first.TaskID {
		t.Errorf("follow-up row: of %q session %q (task says %q); want both %q", row.FollowUpOf, row.SessionID, task.SessionID(), first.TaskID)
	}
	sess, err := st2.SessionTasks(context.Background(), first.TaskID)
	if err != nil || len(sess) != 2 {
		t.Errorf("session tasks %d (%v); want 2", len(sess), err)
	}
	if _, err := r2.Start(context.Background(), TaskSpec{Prompt: "x", FollowUp: "no-such-task"}, nil); err == nil {
		t.Error("a follow-up of an unknown task started")
	}
}

// TestLessonsFoundByWordsAcrossReopen: a failed task's lesson goes into
// the store's full-text index; after a reopen, a task about the same thing
// (other words, other forms: "counting" for "count") gets it in its task
// message, an unrelated one does not.
func TestLessonsFoundByWordsAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("grep", `{"pattern":"x"}`)),
		calls("", call("grep", `{"pattern":"x"}`)),
		calls("", call("grep", `{"pattern":"x"}`)),
	}}
	first, _ := newRunner(st, Config{}, m, staticTools(textTool("grep", true, "nothing"))).
		Run(context.Background(), TaskSpec{Kind: KindAsk, Prompt: "count the TODO comments in the parser package"}, nil)
	if first.Status != StateFailed {
		t.Fatalf("first task %s; want failed", first.Status)
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, path)
	hits, err := st2.SearchLessons(context.Background(), "counting TODOs of the parser", 5)
	if err != nil || len(hits) != 1 || hits[0].TaskID != first.TaskID || !strings.Contains(hits[0].Text, "loop_detected") {
		t.Fatalf("SearchLessons = %+v, %v; want the lesson of %s", hits, err, first.TaskID)
	}
	cases := []struct {
		prompt string
		want   bool
	}{
		{"where are the parser TODO comments?", true},
		{"Counting the TODOs in parser", true},
		{"rename the HTTP handler", false},
		{"what does the main package export to other modules", false}, // one shared word is not enough
	}
	for _, c := range cases {
		m2 := &scriptModel{resps: []*llm.Response{answer("ok")}}
		if _, err := newRunner(st2, Config{}, m2, staticTools()).Run(context.Background(), TaskSpec{Prompt: c.prompt}, nil); err != nil {
			t.Fatal(err)
		}
		msg := m2.requests()[0].Messages[1].Content
		if got := strings.Contains(msg, "Lessons from earlier failed tasks") && strings.Contains(msg, "loop_detected"); got != c.want {
			t.Errorf("%q: lesson shown = %v; want %v\n%s", c.prompt, got, c.want, msg)
		}
	}
}

// TestFlightRecorderPerTask: with a workspace root, each task appends its
// model exchanges to .agentls/recordings/<task ID>.jsonl through the real
// client, without the API key; NoRecord turns it off.
func TestFlightRecorderPerTask(t *testing.T) {
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{Name: "grep", Arguments: `{"pattern":"sk-secret-key"}`}}},
		{Text: "done", Times: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const key = "sk-secret-key"
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: key, Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	res, _ := newRunner(nil, Config{Root: root}, client, staticTools(textTool("grep", true, "found "+key))).
		Run(context.Background(), TaskSpec{Prompt: "find the key"}, nil)
	path := filepath.Join(root, ".agentls", "recordings", res.TaskID+".jsonl")
	xs, err := flightrec.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 2 || xs[1].Message == nil || xs[1].Message.Content != "done" {
		t.Fatalf("recording has %d exchanges: %+v", len(xs), xs)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), key) {
		t.Error("the recording contains the API key")
	}

	root2 := t.TempDir()
	res2, _ := newRunner(nil, Config{Root: root2, NoRecord: true}, client, staticTools()).
		Run(context.Background(), TaskSpec{Prompt: "again"}, nil)
	if _, err := os.Stat(filepath.Join(root2, ".agentls", "recordings", res2.TaskID+".jsonl")); !os.IsNotExist(err) {
		t.Errorf("NoRecord wrote a recording (stat: %v)", err)
	}
}

// TestCompactionIsStoredAppendOnly: when the loop compacts the history,
// the store marks the dropped turns excluded ("compacted") and appends the
// compacted history, so the stored context is exactly what the model got,
// and a resume would continue from it; nothing is deleted.
func TestCompactionIsStoredAppendOnly(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	big := strings.Repeat("x", 1600)
	var resps []*llm.Response
	for i := 0; i < 6; i++ {
		resps = append(resps, calls("", call("read_file", fmt.Sprintf(`{"path":"f%d.txt"}`, i))))
	}
	resps = append(resps, answer("read them all"))
	m := &scriptModel{resps: resps}
	r := newRunner(st, Config{ContextWindow: 2000, CompactAt: 0.8, Counter: charCounter{}},
		m, staticTools(textTool("read_file", true, big)))
	res, _ := r.Run(context.Background(), TaskSpec{Prompt: "read six files"}, nil)
	if res.Status != StateCompleted {
		t.Fatalf("%s (%s): %s", res.Status, res.StopReason, res.Error)
	}
	rec, err := st.LoadTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	compacted := 0
	for i, m := range rec.Messages {
		if m.Seq != i {
			t.Fatalf("message %d has Seq %d", i, m.Seq)
		}
		if m.ExcludedReason == store.ExcludedCompacted {
			compacted++
		}
	}
	if compacted == 0 {
		t.Fatal("no message was marked compacted; the test did not compact")
	}
	reqs := m.requests()
	last := reqs[len(reqs)-1].Messages
	got := journal.StoredHistory(rec)
	if !sameMessages(got[:len(got)-1], last) || got[len(got)-1].Content != "read them all" {
		t.Errorf("stored context (%d messages) is not the last request (%d) plus the answer", len(got), len(last))
	}
	if rec.LLMCalls != 7 {
		t.Errorf("LLM calls %d; want 7 (copies after compaction are not counted)", rec.LLMCalls)
	}
}

// TestRepeatedCallIDsAllStored: a server that sends no call IDs gets
// call_0 in every response from the client; each call is still a row of
// the store, so the statistics count all of them.
func TestRepeatedCallIDsAllStored(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	same := func(args string) llm.ToolCall { return llm.ToolCall{ID: "call_0", Name: "grep", Arguments: args} }
	m := &scriptModel{resps: []*llm.Response{
		calls("", same(`{"pattern":"a"}`)),
		calls("", same(`{"pattern":"b"}`)),
		calls("", same(`{"pattern":"c"}`)),
		answer("a, b and c are all there."),
	}}
	res, _ := runStoredTask(t, st, Config{NoRecord: true}, m, staticTools(textTool("grep", true, "x.go:1: match")), TaskSpec{Kind: KindAsk, Prompt: "are a, b and c there?"})
	if res.Status != StateCompleted || res.Tools["grep"].Calls != 3 {
		t.Fatalf("status %s, grep calls %d; want completed with 3", res.Status, res.Tools["grep"].Calls)
	}
	rec, err := st.LoadTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.ToolCalls) != 3 {
		t.Fatalf("store holds %d tool calls; want 3: %+v", len(rec.ToolCalls), rec.ToolCalls)
	}
}

// TestFailedModelCallCounted: a task whose model call failed stores
// the call in its figures, as its result reports it, so statistics after a
// restart agree with the task's report.
func TestFailedModelCallCounted(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	m := &scriptModel{resps: []*llm.Response{nil}} // a permanent failure
	res, _ := runStoredTask(t, st, Config{NoRecord: true}, m, staticTools(), TaskSpec{Kind: KindAsk, Prompt: "what is x?"})
	if res.Status != StateFailed || res.ModelCalls != 1 {
		t.Fatalf("status %s after %d calls; want failed after 1", res.Status, res.ModelCalls)
	}
	rec, err := st.LoadTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.LLMCalls != res.ModelCalls {
		t.Fatalf("store: %d model calls; want %d", rec.LLMCalls, res.ModelCalls)
	}
}

// TestModelServiceFailureTeachesNothing: a task that failed because the
// model service refused it (a bad key) stores no lesson: it says nothing
// about its subject and would crowd out lessons that do.
func TestModelServiceFailureTeachesNothing(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	m := &scriptModel{resps: []*llm.Response{nil}}
	res, _ := newRunner(st, Config{}, m, staticTools(textTool("grep", true, "x"))).
		Run(context.Background(), TaskSpec{Kind: KindAsk, Prompt: "count the TODO comments in the parser package"}, nil)
	if res.Status != StateFailed || res.StopReason != StopModelError {
		t.Fatalf("task %s/%s; want failed/model_error", res.Status, res.StopReason)
	}
	if hits, err := st.SearchLessons(context.Background(), "TODO comments parser", 5); err != nil || len(hits) != 0 {
		t.Fatalf("SearchLessons = %+v, %v; want no lesson from a model service failure", hits, err)
	}
}
