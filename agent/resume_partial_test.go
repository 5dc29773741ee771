package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/store"
)

// TestResumeKeepsResultsOfCallsThatRan: one response asks for a write and
// then a slow command; the process is killed while the command runs. After
// the resume the write keeps its real result (its file is on disk and its
// row is in the store); only the command in flight gets the synthetic
// "not executed" result.
func TestResumeKeepsResultsOfCallsThatRan(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Name: "write and run", ToolCalls: []fakemodel.ToolCall{
			{ID: "call_write", Name: "write_file", Arguments: `{"path":"a.txt","content":"two\n"}`},
			{ID: "call_slow", Name: "run_command", Arguments: `{"command":"echo $$ > started.pid; exec sleep 30"}`},
		}},
		{Name: "after resume", Text: "a.txt says two."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	killChildWhileCommandRuns(t, root, srv.URL())

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStore(t, store.DefaultPath(root))
	live, err := st.Interrupted(ctx)
	if err != nil || len(live) != 1 {
		t.Fatalf("interrupted tasks %+v, %v; want one", live, err)
	}
	id := live[0].ID
	before, err := st.LoadTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(before.Messages); got != "system user assistant tool" {
		t.Fatalf("stored before the resume: %s; want the write's result stored", got)
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
	if res, err := task.Wait(ctx); err != nil || res.Status != StateCompleted {
		t.Fatalf("resumed task = %+v, %v", res, err)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1].Chat.Messages
	seen := map[string]string{}
	for _, m := range last {
		if m.Role == openai.ChatMessageRoleTool {
			seen[m.ToolCallID] = m.Content
		}
	}
	if c := seen["call_write"]; c == "" || strings.Contains(c, "not executed") {
		t.Errorf("the write's result after the resume is %q; want its real result", c)
	}
	if c := seen["call_slow"]; !strings.Contains(c, "not executed") {
		t.Errorf("the command in flight has result %q; want the synthetic one", c)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "two\n" {
		t.Errorf("a.txt = %q", b)
	}
}
