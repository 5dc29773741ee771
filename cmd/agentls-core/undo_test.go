package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/store"
)

// writeFiles writes files (slash paths, folders made as needed) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunResumeThenUndoOnDisk: a task left interrupted in the store (a
// dangling tool call, an edit of a.txt) is resumed by `agentls run --resume`
// in a new process run, completes against the fake model with the dangling
// call repaired; `agentls undo` then reverts its edit on disk; undo after a
// user change of the same line exits 1 and prints the diff.
func TestRunResumeThenUndoOnDisk(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "TWO\n", "go.mod": "module example.com/x\n"})
	s, err := store.Open(ctx, store.DefaultPath(ws), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := "feedbeef-1"
	statsMust(t, s.CreateTask(store.Task{ID: id, Kind: "edit", Prompt: "upper-case a.txt", State: "executing"}))
	for i, m := range []store.Message{
		{Role: "system", Content: "You are agentls."},
		{Role: "user", Content: "upper-case a.txt"},
		{Role: "assistant", ToolCalls: []store.CallRequest{{ID: "c1", Name: "write_file", Arguments: `{"path":"a.txt","content":"TWO\n"}`}}},
		{Role: "tool", ToolCallID: "c1", Name: "write_file", Content: "replaced a.txt"},
		{Role: "assistant", ToolCalls: []store.CallRequest{{ID: "c2", Name: "run_command", Arguments: `{"command":"sleep 100"}`}}},
	} {
		m.Seq, m.ModelCall = i, m.Role == "assistant"
		statsMust(t, s.AppendMessage(id, m))
	}
	statsMust(t, s.RecordEdit(id, store.Edit{Path: "a.txt", Before: "two\n", After: "TWO\n"}))
	statsMust(t, s.Close(ctx))

	srv := startModel(t, `[{"text":"a.txt is upper-cased."}]`)
	var out, errb bytes.Buffer
	if code := mainExit([]string{"run", "--workspace", ws, "--validate", "off", "--resume", id}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("agentls run --resume exited %d:\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), "a.txt is upper-cased.") {
		t.Errorf("stdout: %s", out.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	n := 0
	for _, m := range reqs[0].Chat.Messages {
		if m.ToolCallID == "c2" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d results for the dangling call; want 1", n)
	}

	// Undo on disk, then again after the user changed the line.
	out.Reset()
	errb.Reset()
	if code := mainExit([]string{"undo", "--workspace", ws, id}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("agentls undo exited %d: %s%s", code, out.String(), errb.String())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "two\n" || !strings.Contains(out.String(), "a.txt: reverted") {
		t.Errorf("after undo a.txt = %q; stdout %s", b, out.String())
	}
	writeFiles(t, ws, map[string]string{"a.txt": "Two, mine\n"})
	out.Reset()
	if code := mainExit([]string{"undo", "--workspace", ws, id}, stdio{strings.NewReader(""), &out, &errb}); code != 1 {
		t.Fatalf("agentls undo of a changed file exited %d; want 1", code)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "Two, mine\n" || !strings.Contains(out.String(), "a.txt: NOT reverted") || !strings.Contains(out.String(), "+Two, mine") {
		t.Errorf("a.txt = %q; stdout %s", b, out.String())
	}
}
