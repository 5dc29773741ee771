package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/store"
)

// TestStatsCommandAcrossRestart writes tasks with one store, closes it,
// and reads the figures back with `agentls stats` in table and JSON form.
func TestStatsCommandAcrossRestart(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	s, err := store.Open(ctx, store.DefaultPath(ws), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, end := range []string{store.StateCompleted, store.StateFailed} {
		id := []string{"a", "b"}[i]
		statsMust(t, s.CreateTask(store.Task{ID: id, Prompt: "p"}))
		statsMust(t, s.AppendMessage(id, store.Message{Seq: 0, Role: "assistant", ModelCall: true, Usage: store.Usage{InputTokens: 1000, OutputTokens: 200}}))
		statsMust(t, s.RecordToolCall(id, store.ToolCall{CallID: "1", Name: "run_command", Duration: 1500 * time.Millisecond}))
		statsMust(t, s.FinishTask(id, store.TaskEnd{State: end}))
	}
	statsMust(t, s.Close(ctx))

	var out, errb bytes.Buffer
	if code := mainExit([]string{"stats", "--workspace", ws}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("agentls stats exited %d: %s", code, errb.String())
	}
	for _, want := range []string{"Tasks", "2 (1 completed, 1 failed", "50.0% of ended tasks", "2 (1.0 per task)", "2000 in", "run_command", "1.5s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if code := mainExit([]string{"stats", "--workspace", ws, "--json"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("agentls stats --json exited %d: %s", code, errb.String())
	}
	var st struct {
		Tasks          int     `json:"tasks"`
		CompletionRate float64 `json:"completionRate"`
		MostUsedTools  []struct {
			Name     string  `json:"name"`
			MedianMs float64 `json:"medianMs"`
		} `json:"mostUsedTools"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out.String())
	}
	if st.Tasks != 2 || st.CompletionRate != 0.5 || len(st.MostUsedTools) != 1 || st.MostUsedTools[0].MedianMs != 1500 {
		t.Errorf("--json = %+v", st)
	}
}

func TestStatsCommandWithoutDatabase(t *testing.T) {
	ws := t.TempDir()
	var out, errb bytes.Buffer
	if code := mainExit([]string{"stats", "--workspace", ws, "--json"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"tasks": 0`) {
		t.Errorf("output = %s; want zero tasks", out.String())
	}
	if _, err := os.Stat(filepath.Join(ws, ".agentls")); !os.IsNotExist(err) {
		t.Errorf("stats created the state folder of a workspace without one (%v)", err)
	}
	if code := mainExit([]string{"stats", "extra"}, stdio{strings.NewReader(""), &out, &errb}); code != 2 {
		t.Errorf("stats with an extra argument exited %d; want 2", code)
	}
}

func statsMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
