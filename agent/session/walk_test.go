package session_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
)

// TestFirstModelCallDoesNotWaitForTheFileList: a task started while the
// workspace's files are still being listed sends its first model request
// while the walk is held midway; its whole-workspace grep then finds the
// match in the folder the walk reads last, once the walk goes on.
func TestFirstModelCallDoesNotWaitForTheFileList(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.go", "package a\n")
	writeFile(t, root, "held/h.go", "package h // the needle\n")
	writeFile(t, root, "other/o.go", "package o\n")
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{Name: "grep", Arguments: `{"pattern": "needle", "literal": true}`}}},
		{Text: "Found it."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := session.Defaults()
	s.BaseURL, s.Model, s.Validate, s.Recordings = srv.URL(), "fake-model", "off", false
	release := make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	defer letGo() // a failing test lets the walk end, so Close returns
	h := session.New(s, session.Options{
		DBPath: filepath.Join(t.TempDir(), "agentls.db"), Getenv: func(string) string { return "" },
		WalkHook: func(dir string) {
			if dir == "held" {
				<-release
			}
		},
	})
	defer h.Close()
	defer letGo() // before Close
	h.SetRoots([]string{root})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		out *session.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := h.Run(ctx, agent.TaskSpec{Kind: agent.KindAsk, Prompt: "Where is the needle?"}, &recPort{})
		done <- result{out, err}
	}()
	// The walk stays held until the model was asked: a task that waited
	// for the list would never ask, and the wait ends at the deadline.
	for len(srv.Requests()) == 0 {
		select {
		case r := <-done:
			t.Fatalf("the task ended before asking the model: %v, %v", r.out, r.err)
		case <-ctx.Done():
			t.Fatal("no model request while the walk was held: the task waits for the file list")
		case <-time.After(5 * time.Millisecond):
		}
	}
	letGo()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.out.Result.Status != agent.StateCompleted {
		t.Fatalf("task %s: %s", r.out.Result.Status, r.out.Result.Error)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2", len(reqs))
	}
	last := reqs[1].Chat.Messages[len(reqs[1].Chat.Messages)-1]
	if !strings.Contains(last.Content, "held/h.go:1:") {
		t.Errorf("the grep after the walk went on did not find held/h.go: %q", last.Content)
	}
}
