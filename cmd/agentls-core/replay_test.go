package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/llm/recorder"
)

func TestReplayCommandTurnsARecordingIntoAScript(t *testing.T) {
	dir := t.TempDir()
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Status: 500},
		{Text: "one", ToolCalls: []fakemodel.ToolCall{{ID: "a", Name: "grep", Arguments: `{"pattern":"x"}`}}},
		{Text: "two"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec, err := recorder.Open(dir, "task", recorder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", Retry: llm.RetryPolicy{Base: 1, Cap: 1}}, llm.WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}}}
	for range 2 {
		resp, err := c.Complete(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "a", Content: "r"})
	}
	rec.Close()

	tests := []struct {
		name  string
		args  []string
		turns int
	}{
		{"file then -o", []string{rec.Path(), "-o", filepath.Join(dir, "a.json")}, 2},
		{"-o then file, with failures", []string{"-failures", "-o", filepath.Join(dir, "b.json"), rec.Path()}, 3},
		{"stdout", []string{rec.Path()}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if err := runReplay(context.Background(), stdio{out: &out, err: &errb}, tt.args); err != nil {
				t.Fatalf("replay %v: %v (%s)", tt.args, err, errb.String())
			}
			data := out.Bytes()
			for i, a := range tt.args {
				if a == "-o" {
					data, _ = os.ReadFile(tt.args[i+1])
				}
			}
			s, err := fakemodel.ParseScript(data)
			if err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, data)
			}
			if len(s.Turns) != tt.turns || s.Turns[len(s.Turns)-1].Text != "two" {
				t.Errorf("script %s; want %d turns ending with \"two\"", data, tt.turns)
			}
		})
	}
	var out, errb bytes.Buffer
	if err := runReplay(context.Background(), stdio{out: &out, err: &errb}, nil); err == nil {
		t.Error("replay without a file succeeded")
	}
}
