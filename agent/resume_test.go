package agent

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/store"
)

// crashChildEnv carries "<workspace root>\n<model URL>" to the child process
// of TestResumeAfterKillRepairsTheDanglingCall.
const crashChildEnv = "AGENTLS_TEST_CRASH_CHILD"

// crashPrompt is the task the child runs and the parent resumes.
const crashPrompt = "make a.txt say two, then run the slow check"

// TestCrashChild is the child process of TestResumeAfterKillRepairsTheDanglingCall: it
// runs an edit task against the parent's fake model until it is killed.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("the child process of TestResumeAfterKillRepairsTheDanglingCall")
	}
	root, url, _ := strings.Cut(spec, "\n")
	ctx := context.Background()
	st, err := store.Open(ctx, store.DefaultPath(root), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := llm.New(llm.Config{BaseURL: url, APIKey: "test-key", Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	ws := mustWorkspace(t, root)
	r := newRunner(st, Config{Root: root, Files: ws, Validate: ValidateOff}, client, realTools(ws, nil))
	task, err := r.Start(ctx, TaskSpec{Kind: KindEdit, Prompt: crashPrompt}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-task.Done()
	t.Fatalf("the task ended before the process was killed: %+v", task.Result())
}

// TestResumeAfterKillRepairsTheDanglingCall: a child process runs an edit task against the
// fake model; it is SIGKILLed while a tool call (a sleeping command) runs.
// The parent reopens the store: the task is listed as interrupted, with
// every message up to the dangling call. Resume completes it against the
// same fake model: the request after the restart holds exactly one
// (synthetic) result for the dangling call, reports the file the user
// changed meanwhile, and the store holds every message once, Seq gapless.
func TestResumeAfterKillRepairsTheDanglingCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := `{"items":[{"id":"1","text":"make a.txt say two","status":"done"},{"id":"2","text":"run the slow check","status":"in_progress"}]}`
	done := `{"items":[{"id":"1","text":"make a.txt say two","status":"done"},{"id":"2","text":"run the slow check","status":"done"}]}`
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Name: "plan and write", ToolCalls: []fakemodel.ToolCall{
			{Name: "update_plan", Arguments: fakemodel.Args(open)},
			{Name: "write_file", Arguments: `{"path":"a.txt","content":"two\n"}`},
		}},
		{Name: "slow command", ToolCalls: []fakemodel.ToolCall{
			{ID: "call_slow", Name: "run_command", Arguments: `{"command":"echo $$ > started.pid; exec sleep 30"}`},
		}},
		{Name: "after resume", Text: "a.txt says two; the slow check was interrupted and is not needed.", ToolCalls: []fakemodel.ToolCall{
			{Name: "update_plan", Arguments: fakemodel.Args(done)},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// The child runs the task until the command has started, then dies.
	killChildWhileCommandRuns(t, root, srv.URL())

	// Meanwhile the user changes a file the task changed.
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("two\nand a line of mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStore(t, store.DefaultPath(root))
	if err := st.Check(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := st.Interrupted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].Prompt != crashPrompt || live[0].State != string(StateExecuting) {
		t.Fatalf("interrupted tasks %+v; want the one task, executing", live)
	}
	id := live[0].ID
	before, err := st.LoadTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(before.Messages); got != "system user assistant tool tool assistant" {
		t.Fatalf("stored before the resume: %s; want every message up to the dangling call", got)
	}
	if c := before.Messages[5].ToolCalls; len(c) != 1 || c[0].ID != "call_slow" {
		t.Fatalf("last stored message calls %+v; want the slow command", c)
	}

	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test-key", Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	ws := mustWorkspace(t, root)
	r := newRunner(st, Config{Root: root, Files: ws, Validate: ValidateOff}, client, realTools(ws, nil))
	task, err := r.Resume(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if task.ID() != id {
		t.Errorf("resumed task ID %s; want %s", task.ID(), id)
	}
	res, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StateCompleted {
		t.Fatalf("resumed task %s (%s): %s; notes %v", res.Status, res.StopReason, res.Error, res.Notes)
	}
	if _, err := r.Resume(ctx, id, nil); err == nil {
		t.Error("a completed task was resumed again")
	}

	// What the model received after the restart.
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests; want 3 (2 before the kill, 1 after)", len(reqs))
	}
	last := reqs[2].Chat.Messages
	results := 0
	for _, m := range last {
		if m.Role == openai.ChatMessageRoleTool && m.ToolCallID == "call_slow" {
			results++
			if !strings.Contains(m.Content, "not executed") {
				t.Errorf("the dangling call's result is %q; want the synthetic one", m.Content)
			}
		}
	}
	if results != 1 {
		t.Errorf("%d results for the dangling call in the request after the restart; want exactly 1", results)
	}
	note := last[len(last)-1]
	if note.Role != openai.ChatMessageRoleUser || !strings.Contains(note.Content, "resumed") ||
		!strings.Contains(note.Content, "a.txt: changed since the task's last step") || !strings.Contains(note.Content, "+and a line of mine") {
		t.Errorf("the last message after the restart does not report the user's change:\n%s", note.Content)
	}
	if len(last) != 8 {
		t.Errorf("request after the restart has %d messages; want 8 (6 stored, 1 synthetic result, 1 note)", len(last))
	}

	// What the store holds: every message once, in order.
	after, err := st.LoadTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range after.Messages {
		if m.Seq != i {
			t.Fatalf("message %d has Seq %d: lost or duplicated", i, m.Seq)
		}
		if i < len(before.Messages) && (m.Role != before.Messages[i].Role || m.Content != before.Messages[i].Content) {
			t.Errorf("message %d changed by the resume", i)
		}
	}
	if got := roles(after.Messages); got != "system user assistant tool tool assistant tool user assistant tool" {
		t.Errorf("stored after the resume: %s", got)
	}
	afterPlan, err := journal.StoredPlan(after)
	if after.State != store.StateCompleted || after.LLMCalls != 3 || err != nil || afterPlan == nil || afterPlan.Open() != 0 || after.PlanSeq != 2 {
		t.Errorf("task after the resume: state %s, %d model calls, plan %s (%d updates, %v)", after.State, after.LLMCalls, after.Plan, after.PlanSeq, err)
	}
	if v := ValidHistory(journal.StoredHistory(after)); v != "" {
		t.Errorf("stored context: %s", v)
	}
	if live, _ := st.Interrupted(ctx); len(live) != 0 {
		t.Errorf("still interrupted after the resume: %+v", live)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "a.txt" {
		t.Errorf("result files %+v; want a.txt from before the crash", res.Files)
	}
}

func roles(ms []store.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Role))
	}
	return strings.Join(out, " ")
}

// TestResumeRefusals: no store, an unknown task, an ended task.
func TestResumeRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := newRunner(nil, Config{}, &scriptModel{}, staticTools()).Resume(ctx, "x", nil); err == nil {
		t.Error("resumed without a store")
	}
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	r := newRunner(st, Config{}, &scriptModel{resps: []*llm.Response{answer("ok")}}, staticTools())
	if _, err := r.Resume(ctx, "no-such-task", nil); err == nil {
		t.Error("resumed an unknown task")
	}
	res, _ := r.Run(ctx, TaskSpec{Prompt: "hi"}, nil)
	if _, err := r.Resume(ctx, res.TaskID, nil); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("resume of an ended task: %v", err)
	}
}

// TestResumeTaskWithoutMessages: a task killed before its first message
// was stored starts over under its ID, with its editor context.
func TestResumeTaskWithoutMessages(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	if err := st.CreateTask(store.Task{ID: "t-1", Kind: "ask", Prompt: "explain Foo", EditorContext: []byte(`{"file":"a.go","symbol":"Foo"}`)}); err != nil {
		t.Fatal(err)
	}
	m := &scriptModel{resps: []*llm.Response{answer("Foo says hi.")}}
	r := newRunner(st, Config{}, m, staticTools())
	task, err := r.Start(ctx, TaskSpec{ResumeID: "t-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := task.Wait(ctx)
	if res.Status != StateCompleted || task.ID() != "t-1" {
		t.Fatalf("%s %s: %s", task.ID(), res.Status, res.Error)
	}
	if msg := m.requests()[0].Messages[1].Content; !strings.Contains(msg, "Symbol under the cursor: Foo") || !strings.Contains(msg, "explain Foo") {
		t.Errorf("task message: %s", msg)
	}
	rec, _ := st.LoadTask(ctx, "t-1")
	if roles(rec.Messages) != "system user assistant" || rec.State != store.StateCompleted {
		t.Errorf("stored %s, %s", roles(rec.Messages), rec.State)
	}
}

// killChildWhileCommandRuns runs TestCrashChild in a child process on root
// against the model at url, waits until the command it runs has written its
// pid to started.pid, then SIGKILLs the child and ends the command's process
// group, as a crash would leave it.
func killChildWhileCommandRuns(t *testing.T, root, url string) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	child.Env = append(os.Environ(), crashChildEnv+"="+root+"\n"+url)
	var out bytes.Buffer
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	var sleeper int
	deadline := time.After(30 * time.Second)
	for sleeper == 0 {
		select {
		case err := <-exited:
			t.Fatalf("the child exited before the command started (%v):\n%s", err, out.String())
		case <-deadline:
			child.Process.Kill()
			t.Fatalf("the command did not start within 30 s:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		b, _ := os.ReadFile(filepath.Join(root, "started.pid"))
		if s := strings.TrimSpace(string(b)); strings.HasSuffix(string(b), "\n") && s != "" {
			sleeper, _ = strconv.Atoi(s)
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	// The command's process group outlives the killed process: end it.
	syscall.Kill(-sleeper, syscall.SIGKILL)
	syscall.Kill(sleeper, syscall.SIGKILL)
}
