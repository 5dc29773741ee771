package session

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentls/agentls/agent/store"
)

// TestSessionsAndReplay: the host lists the store's sessions (a session
// without a title is named by its first prompt's first line) and replays a
// session's tasks, oldest first, with their tool calls and file changes; an
// unknown session replays as nothing.
func TestSessionsAndReplay(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(t.TempDir(), "agentls.db")
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.CreateTask(store.Task{ID: "aaaa-1", SessionID: "s1", Kind: "edit", Prompt: "fix a.txt\nplease", State: "executing"}))
	must(st.RecordToolCall("aaaa-1", store.ToolCall{CallID: "c1", Name: "read_file", Args: []byte(`{"path":"a.txt"}`), Summary: "one"}))
	must(st.RecordEdit("aaaa-1", store.Edit{Path: "a.txt", Before: "one\n", After: "two\n"}))
	must(st.FinishTask("aaaa-1", store.TaskEnd{State: "completed", Answer: "done"}))
	must(st.CreateTask(store.Task{ID: "aaaa-2", SessionID: "s1", Kind: "ask", Prompt: "and b?", State: "executing"}))
	must(st.Close(ctx))

	h := New(Defaults(), Options{DBPath: path})
	h.SetRoots([]string{root})
	defer h.Close()

	sessions, err := h.Sessions(ctx, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || sessions[0].ID != "s1" || sessions[0].Title != "fix a.txt" {
		t.Errorf("Sessions = %+v; want s1 titled %q", sessions, "fix a.txt")
	}

	tasks, err := h.Replay(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[0].ID != "aaaa-1" || tasks[1].ID != "aaaa-2" {
		t.Fatalf("Replay(s1) = %+v; want aaaa-1 then aaaa-2", tasks)
	}
	first, second := tasks[0], tasks[1]
	if !first.Ended || first.State != "completed" || first.Answer != "done" {
		t.Errorf("first task = %+v; want ended, completed, answer done", first)
	}
	if len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "read_file" || string(first.ToolCalls[0].Args) != `{"path":"a.txt"}` {
		t.Errorf("first task's tool calls = %+v", first.ToolCalls)
	}
	if len(first.Files) != 1 || first.Files[0] != (ReplayFile{Path: "a.txt", Before: "one\n", After: "two\n"}) {
		t.Errorf("first task's files = %+v", first.Files)
	}
	if second.Ended || second.State != "executing" || len(second.Files) != 0 {
		t.Errorf("second task = %+v; want interrupted in executing, no files", second)
	}

	if none, err := h.Replay(ctx, "ghost"); err != nil || len(none) != 0 {
		t.Errorf("Replay(ghost) = %+v, %v; want nothing", none, err)
	}
}
