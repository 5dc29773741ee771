package lsp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestUndoCommandOpenFileAndDisk: a task changes three files; the user
// then opens one in the editor and edits another on disk where the task
// did. agentls.undo reverts the open file with ONE workspace/applyEdit and
// the untouched one on disk, leaves the user's edit alone and names that
// file with a diff in the reply.
func TestUndoCommandOpenFileAndDisk(t *testing.T) {
	orig := map[string]string{"a.txt": "alpha\nx\n", "b.txt": "beta\nx\n", "c.txt": "gamma\nx\n"}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{
			{Name: "write_file", Arguments: `{"path":"a.txt","content":"ALPHA\nx\n"}`},
			{Name: "write_file", Arguments: `{"path":"b.txt","content":"BETA\nx\n"}`},
			{Name: "write_file", Arguments: `{"path":"c.txt","content":"GAMMA\nx\n"}`},
		}},
		{Text: "Upper-cased the first lines."},
	}, orig, lsptest.Config{ApplyEdit: true}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "upper-case the first line of each file", "mode": "edit"})
	if err != nil || r.Status != "completed" || len(r.ChangedFiles) != 3 {
		t.Fatalf("task: %+v, %v", r, err)
	}
	if err := os.WriteFile(a.path("b.txt"), []byte("Beta, mine\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.open(t, "a.txt")
	before := len(a.c.Snapshot().AppliedEdits)

	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]any{"taskId": r.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	var reply lsp.UndoReply
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	if strings.Join(reply.Reverted, ",") != "a.txt,c.txt" || len(reply.NotReverted) != 1 || reply.NotReverted[0].Path != "b.txt" ||
		!strings.Contains(reply.NotReverted[0].Diff, "-BETA") || !strings.Contains(reply.NotReverted[0].UserDiff, "+Beta, mine") {
		t.Fatalf("agentls.undo = %s", raw)
	}
	st := a.c.Snapshot()
	if n := len(st.AppliedEdits) - before; n != 1 {
		t.Errorf("%d workspace/applyEdit requests for the undo; want 1", n)
	}
	if text, _, _ := a.c.Document(a.path("a.txt")); text != orig["a.txt"] {
		t.Errorf("editor buffer of a.txt = %q; want %q", text, orig["a.txt"])
	}
	if got := readFile(t, a.path("c.txt")); got != orig["c.txt"] {
		t.Errorf("c.txt = %q", got)
	}
	if got := readFile(t, a.path("b.txt")); got != "Beta, mine\nx\n" {
		t.Errorf("the user's b.txt was clobbered: %q", got)
	}
	if !st.HasShowMessage("not reverted (changed since the task): b.txt") {
		t.Errorf("no message names b.txt: %+v", st.ShowMessages)
	}
	if _, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]any{"taskId": "nope"}); !isCode(err, jsonrpc2.InvalidParams) {
		t.Errorf("undo of an unknown task: %v", err)
	}
	a.checkNoKey(t)
}

func isCode(err error, code jsonrpc2.Code) bool {
	var e *jsonrpc2.Error
	if err == nil {
		return false
	}
	if je, ok := err.(*jsonrpc2.Error); ok {
		e = je
	}
	return e != nil && e.Code == code
}

// seedStore writes the tasks an earlier server left: one completed two
// days ago, one interrupted in the middle of a tool call.
func seedStore(t *testing.T, root string) {
	t.Helper()
	c := context.Background()
	st, err := store.Open(c, store.DefaultPath(root), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-48 * time.Hour)
	must(st.CreateTask(store.Task{ID: "0000a1d0-1", Kind: "ask", Prompt: "count the lines of main.go", CreatedAt: old}))
	must(st.AppendMessage("0000a1d0-1", store.Message{Seq: 0, Role: "assistant", Content: "42 lines.", ModelCall: true, Usage: store.Usage{InputTokens: 100, OutputTokens: 10}}))
	must(st.FinishTask("0000a1d0-1", store.TaskEnd{State: store.StateCompleted, StopReason: "answered", Answer: "main.go has 42 lines.", At: old}))
	must(st.CreateTask(store.Task{ID: "0000a1d0-2", Kind: "ask", Prompt: "what does the build script do", State: "executing"}))
	for i, m := range []store.Message{
		{Role: "system", Content: "You are agentls."},
		{Role: "user", Content: "what does the build script do"},
		{Role: "assistant", ToolCalls: []store.CallRequest{{ID: "c9", Name: "read_file", Arguments: `{"path":"build.sh"}`}}},
	} {
		m.Seq, m.ModelCall = i, m.Role == "assistant"
		must(st.AppendMessage("0000a1d0-2", m))
	}
	must(st.Close(c))
}

func tasksOf(t *testing.T, a *agentSession, arg any) []lsp.TaskInfo {
	t.Helper()
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandTasks, arg)
	if err != nil {
		t.Fatalf("agentls.tasks %v: %v", arg, err)
	}
	var list []lsp.TaskInfo
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	return list
}

func ids(list []lsp.TaskInfo) string {
	var out []string
	for _, ti := range list {
		s := ti.ID
		if ti.Interrupted {
			s += "!"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestTasksResumeStatsAcrossRestart: the tasks an earlier server left in
// the store are listed by agentls.tasks (filters state and since; the
// interrupted one flagged), a follow-up can name one, agentls.resume
// continues the interrupted one under its ID with the dangling call
// repaired, and agentls.stats counts them all.
func TestTasksResumeStatsAcrossRestart(t *testing.T) {
	root := t.TempDir()
	seedStore(t, root)
	a := newAgentSession(t, []fakemodel.Turn{
		{Name: "new task", Text: "It is a Go module."},
		{Name: "follow-up", Text: "Without blank lines: 30."},
		{Name: "resume", Text: "The build script runs go build."},
	}, map[string]string{"go.mod": "module x\n"}, lsptest.Config{}, agentOpts{})
	// The session uses its own temporary root: move the seeded database in.
	if err := os.MkdirAll(filepath.Join(a.root, ".agentls"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(store.DefaultPath(root), store.DefaultPath(a.root)); err != nil {
		t.Fatal(err)
	}

	r, err := a.run(t, map[string]any{"prompt": "what is this project", "mode": "ask"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("new task: %+v, %v", r, err)
	}
	if got := ids(tasksOf(t, a, nil)); got != "0000a1d0-1 0000a1d0-2! "+r.TaskID {
		t.Errorf("agentls.tasks = %s", got)
	}
	for _, c := range []struct {
		arg  any
		want string
	}{
		{map[string]any{"state": "interrupted"}, "0000a1d0-2!"},
		{map[string]any{"state": []string{"completed"}}, "0000a1d0-1 " + r.TaskID},
		{map[string]any{"state": "live"}, "0000a1d0-2!"},
		{map[string]any{"since": "24h"}, "0000a1d0-2! " + r.TaskID},
		{map[string]any{"since": time.Now().Add(-72 * time.Hour).Format(time.RFC3339), "state": "completed"}, "0000a1d0-1 " + r.TaskID},
	} {
		if got := ids(tasksOf(t, a, c.arg)); got != c.want {
			t.Errorf("agentls.tasks %v = %q; want %q", c.arg, got, c.want)
		}
	}
	for _, bad := range []any{map[string]any{"state": 3}, map[string]any{"since": "yesterday"}, map[string]any{"bogus": 1}} {
		if _, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandTasks, bad); !isCode(err, jsonrpc2.InvalidParams) {
			t.Errorf("agentls.tasks %v: %v; want InvalidParams", bad, err)
		}
	}

	// A follow-up of a task of the earlier server.
	f, err := a.run(t, map[string]any{"prompt": "wrong, skip blank lines", "mode": "ask", "followUp": "0000a1d0-1"})
	if err != nil || f.Status != "completed" {
		t.Fatalf("follow-up: %+v, %v", f, err)
	}
	reqs := a.model.Requests()
	if msg := reqs[1].Chat.Messages[1].Content; !strings.Contains(msg, "count the lines of main.go") || !strings.Contains(msg, "main.go has 42 lines.") {
		t.Errorf("follow-up task message lacks the earlier task:\n%s", msg)
	}

	// Resume the interrupted task.
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandResume, map[string]any{"taskId": "0000a1d0-2"})
	if err != nil {
		t.Fatal(err)
	}
	var rr lsp.RunReply
	if err := json.Unmarshal(raw, &rr); err != nil || rr.TaskID != "0000a1d0-2" || rr.Status != "completed" || rr.Answer != "The build script runs go build." {
		t.Fatalf("agentls.resume = %s, %v", raw, err)
	}
	reqs = a.model.Requests()
	n := 0
	for _, m := range reqs[2].Chat.Messages {
		if m.ToolCallID == "c9" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d results for the dangling call; want 1", n)
	}
	if got := ids(tasksOf(t, a, map[string]any{"state": "interrupted"})); got != "" {
		t.Errorf("still interrupted after the resume: %s", got)
	}
	for _, bad := range []string{"0000a1d0-2", "0000a1d0-1", "nope"} {
		if _, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandResume, map[string]any{"taskId": bad}); !isCode(err, jsonrpc2.InvalidParams) {
			t.Errorf("agentls.resume %s: %v; want InvalidParams", bad, err)
		}
	}

	raw, _, err = a.c.ExecuteCommand(ctx(t), lsp.CommandStats, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Tasks     int    `json:"tasks"`
		Completed int    `json:"completed"`
		Live      int    `json:"live"`
		Markdown  string `json:"markdown"`
	}
	if err := json.Unmarshal(raw, &stats); err != nil || stats.Tasks != 4 || stats.Completed != 4 || stats.Live != 0 ||
		!strings.Contains(stats.Markdown, "Completion rate: 100.0%") {
		t.Errorf("agentls.stats = %s, %v", raw, err)
	}
	raw, _, err = a.c.ExecuteCommand(ctx(t), lsp.CommandStats, map[string]any{"since": "24h"})
	if err != nil || json.Unmarshal(raw, &stats) != nil || stats.Tasks != 3 {
		t.Errorf("agentls.stats since 24h = %s, %v; want 3 tasks", raw, err)
	}
	a.checkNoKey(t)
}
