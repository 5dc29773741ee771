package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestServeKilledMidToolCallResumes is the end-to-end test of the session store:
// the real `agentls serve` over stdio runs an edit task against the
// scripted model and is SIGKILLed while the task's command runs. A new
// server on the same workspace lists the task as interrupted
// (agentls.tasks), and agentls.resume completes it: the model gets exactly
// one (synthetic) result for the dangling call and a note naming the file
// the user changed meanwhile; the store holds every message once.
func TestServeKilledMidToolCallResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentls(t, t.TempDir())
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := `{"items":[{"id":"1","text":"make a.txt say two","status":"done"},{"id":"2","text":"run the slow check","status":"in_progress"}]}`
	done := `{"items":[{"id":"1","text":"make a.txt say two","status":"done"},{"id":"2","text":"run the slow check","status":"done"}]}`
	model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{
			{Name: "update_plan", Arguments: fakemodel.Args(open)},
			{Name: "write_file", Arguments: `{"path":"a.txt","content":"two\n"}`},
		}},
		{ToolCalls: []fakemodel.ToolCall{
			{ID: "call_slow", Name: "run_command", Arguments: `{"command":"echo $$ > started.pid; exec sleep 30"}`},
		}},
		{Text: "a.txt says two; the slow check was interrupted and is not needed.", ToolCalls: []fakemodel.ToolCall{
			{Name: "update_plan", Arguments: fakemodel.Args(done)},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	env := append(userSettingsEnv(t, map[string]any{"baseURL": model.URL(), "model": "fake-model", "validate": "off", "approval": "auto"}), "OPENAI_API_KEY=sk-e2e-secret")
	cfg := lsptest.Config{
		Roots:     []string{root},
		ApplyEdit: true,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// First server: the task runs until the command starts; then SIGKILL.
	p1 := lsptest.StartProcess(t, bin, []string{"serve", "--log-file", "-"}, env, cfg)
	if _, err := p1.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	go p1.ExecuteCommand(ctx, lsp.CommandRun, map[string]any{"prompt": "make a.txt say two, then run the slow check", "mode": "edit"})
	var sleeper int
	for sleeper == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the command did not start; stderr:\n%s", p1.Stderr())
		case <-time.After(20 * time.Millisecond):
		}
		if b, _ := os.ReadFile(filepath.Join(root, "started.pid")); strings.HasSuffix(string(b), "\n") {
			sleeper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if err := p1.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(-sleeper, syscall.SIGKILL)
	syscall.Kill(sleeper, syscall.SIGKILL)
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("two\nand a line of mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Second server on the same workspace.
	p2 := lsptest.StartProcess(t, bin, []string{"serve", "--log-file", "-"}, env, cfg)
	if _, err := p2.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	raw, _, err := p2.ExecuteCommand(ctx, lsp.CommandTasks, map[string]any{"state": "interrupted"})
	if err != nil {
		t.Fatal(err)
	}
	var list []lsp.TaskInfo
	if err := json.Unmarshal(raw, &list); err != nil || len(list) != 1 || !list[0].Interrupted || list[0].State != "interrupted" || list[0].Mode != "edit" {
		t.Fatalf("agentls.tasks {state: interrupted} = %s (%v); want the one interrupted task", raw, err)
	}
	id := list[0].ID
	raw, _, err = p2.ExecuteCommand(ctx, lsp.CommandResume, map[string]any{"taskId": id})
	if err != nil {
		t.Fatalf("agentls.resume: %v; stderr:\n%s", err, p2.Stderr())
	}
	var reply lsp.RunReply
	if err := json.Unmarshal(raw, &reply); err != nil || reply.TaskID != id || reply.Status != "completed" || reply.LLMCalls != 3 {
		t.Fatalf("agentls.resume = %s (%v); want task %s completed after 3 model calls", raw, err, id)
	}

	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests; want 3", len(reqs))
	}
	last := reqs[2].Chat.Messages
	results := 0
	for _, m := range last {
		if m.Role == openai.ChatMessageRoleTool && m.ToolCallID == "call_slow" {
			results++
		}
	}
	if results != 1 {
		t.Errorf("%d results for the dangling call after the restart; want exactly 1", results)
	}
	if n := last[len(last)-1]; n.Role != openai.ChatMessageRoleUser || !strings.Contains(n.Content, "a.txt: changed since the task's last step") {
		t.Errorf("last message after the restart: %s: %q", n.Role, n.Content)
	}

	if err := p2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_ = p2.Exit(ctx)
	if code, err := p2.Wait(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("second server exit %d, %v", code, err)
	}
	st, err := store.Open(ctx, store.DefaultPath(root), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	rec, err := st.LoadTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for i, m := range rec.Messages {
		if m.Seq != i {
			t.Fatalf("message %d has Seq %d: lost or duplicated", i, m.Seq)
		}
		roles = append(roles, string(m.Role))
	}
	if got := strings.Join(roles, " "); got != "system user assistant tool tool assistant tool user assistant tool" {
		t.Errorf("stored messages: %s", got)
	}
	if rec.State != store.StateCompleted || agent.ValidHistory(journal.StoredHistory(rec)) != "" {
		t.Errorf("stored task: %s, history problem %q", rec.State, agent.ValidHistory(journal.StoredHistory(rec)))
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".agentls", "recordings", id+".jsonl")); strings.Count(string(b), "\n") != 3 || strings.Contains(string(b), "sk-e2e-secret") {
		t.Errorf("flight recording of %s: %d lines (want 3, across both processes), key present: %v", id, strings.Count(string(b), "\n"), strings.Contains(string(b), "sk-e2e-secret"))
	}
}
