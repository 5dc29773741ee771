package lsp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// treeOf reads every file of root except the state folder.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".agentls" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPlanWritesNothingThenExecutes: a plan task whose model tries a write
// and a command gets both refused with the reason; the workspace is byte
// for byte as before; the reply names the files the plan would change.
// Executing the plan (a follow-up edit task) starts from its items and
// makes the change.
func TestPlanWritesNothingThenExecutes(t *testing.T) {
	planned := `{"items":[{"id":"1","text":"make Foo say hi","status":"pending","files":["a.go"]},{"id":"2","text":"run the tests","status":"pending"}]}`
	done := `{"items":[{"id":"1","text":"make Foo say hi","status":"done","files":["a.go"]},{"id":"2","text":"run the tests","status":"skipped","reason":"no tests in this package"}]}`
	a := newAgentSession(t, []fakemodel.Turn{
		{Name: "plan", ToolCalls: []fakemodel.ToolCall{
			call("p1", "update_plan", planned),
			call("p2", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`),
			call("p3", "run_command", `{"command":"touch ran.txt"}`),
		}},
		{Name: "plan answer", Match: &fakemodel.Match{LastToolResult: "plan task"}, Text: "Change `a.go`: Foo returns \"hi\". Then run `go test ./...`.", FinishReason: "stop"},
		{Name: "execute", Match: &fakemodel.Match{LastUser: "Execute the plan"}, Delay: fakemodel.Duration(400 * time.Millisecond), ToolCalls: []fakemodel.ToolCall{
			call("e1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`),
			call("e2", "update_plan", done),
		}},
		{Name: "done", Match: &fakemodel.Match{LastToolResult: "plan updated"}, Text: "Foo says hi.", FinishReason: "stop"},
	}, goFiles, lsptest.Config{WorkDoneProgress: true, ApplyEdit: true}, agentOpts{})
	before := treeOf(t, a.root)
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi", "mode": "plan"})
	if err != nil || r.Status != "completed" || r.Mode != "plan" {
		t.Fatalf("plan reply = %+v, %v", r, err)
	}
	if strings.Join(r.PlannedFiles, ",") != "a.go" || len(r.Plan.Items) != 2 || len(r.ChangedFiles) != 0 {
		t.Errorf("plan reply = %+v; want a.go planned, two items, nothing changed", r)
	}
	after := treeOf(t, a.root)
	if len(after) != len(before) {
		t.Errorf("files after the plan: %d; before: %d", len(after), len(before))
	}
	for p, text := range before {
		if after[p] != text {
			t.Errorf("%s changed by a plan task", p)
		}
	}
	reqs := a.model.Requests()
	body := string(reqs[1].Body)
	for _, want := range []string{`tool \"edit_file\" is not available in this plan task`, `tool \"run_command\" is not available in this plan task`, "nothing is written and no command runs"} {
		if !strings.Contains(body, want) {
			t.Errorf("the model was not told %q", want)
		}
	}
	if n := len(a.c.Snapshot().AppliedEdits); n != 0 {
		t.Errorf("%d applyEdit requests during the plan", n)
	}

	e, err := a.run(t, map[string]any{"prompt": "go ahead", "mode": "edit", "followUp": r.TaskID})
	if err != nil || e.Status != "completed" || strings.Join(e.ChangedFiles, ",") != "a.go" {
		t.Fatalf("execute reply = %+v, %v", e, err)
	}
	if b := readFile(t, a.path("a.go")); !strings.Contains(b, `"hi"`) {
		t.Errorf("a.go = %q", b)
	}
	reqs = a.model.Requests()
	first := string(reqs[2].Body)
	if !strings.Contains(first, "1: make Foo say hi (files: a.go)") || !strings.Contains(first, "2: run the tests") {
		t.Errorf("the executing task's first request does not carry the plan items")
	}
	st := a.c.Snapshot()
	// Titled after the plan it executes, not after "go ahead".
	if progressOf(&st, "agentls: go ahead") != nil {
		t.Errorf("the executing task is titled \"go ahead\"")
	}
	p := progressOf(&st, "agentls: execute the plan: make Foo say hi")
	if p == nil || !strings.Contains(reportMessages(p), "[ ] make Foo say hi") {
		t.Errorf("the executing task's progress did not start from the plan: %s", reportMessages(p))
	}
}
