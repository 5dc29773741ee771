package lsp_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// saveScript edits the open a.go, then runs a command that reads a.go from
// disk: the command must see the agent's edit.
var saveScript = []fakemodel.Turn{
	{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
	{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, ToolCalls: []fakemodel.ToolCall{call("c2", "run_command", `{"command":"cat a.go"}`)}},
	{Match: &fakemodel.Match{LastToolResult: "exit code"}, Text: "Done.", FinishReason: "stop"},
}

// TestCommandSeesTheTasksUnsavedEdit: a task edits a file open in the
// editor (the edit sits unsaved in the buffer) and runs a command; the
// command reads the agent's text from disk. A client with the agentls
// plugin is asked to save (agentls/saveDocuments); a plain client gets the
// file written by agentls, because the buffer holds only the agent's
// change.
func TestCommandSeesTheTaskOwnUnsavedEdit(t *testing.T) {
	for _, plugin := range []bool{true, false} {
		name := "plain client"
		if plugin {
			name = "client with the plugin"
		}
		t.Run(name, func(t *testing.T) {
			a := newAgentSession(t, saveScript, goFiles, lsptest.Config{ApplyEdit: true, SaveDocuments: plugin}, agentOpts{})
			a.open(t, "a.go")
			r, err := a.run(t, map[string]any{"prompt": "make Foo say hi, then show a.go", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("reply = %+v, %v", r, err)
			}
			reqs := a.model.Requests()
			last := string(reqs[len(reqs)-1].Body)
			if !strings.Contains(last, `return \"hi\"`) {
				t.Errorf("the command did not see the agent's edit; last request: %s", last)
			}
			if strings.Contains(last, "unsaved changes the user made") {
				t.Errorf("the model was told of unsaved changes: %s", last)
			}
			if b := readFile(t, a.path("a.go")); !strings.Contains(b, `"hi"`) {
				t.Errorf("a.go on disk = %q", b)
			}
			saves := a.c.Snapshot().SaveRequests
			if plugin && len(saves) != 1 {
				t.Errorf("save requests = %v; want one for a.go", saves)
			}
		})
	}
}

// TestUserUnsavedTextIsNeverWrittenForACommand: the user has typed into
// a.go without saving; the agent edits the same buffer and runs a command.
// agentls does not save the user's text: the disk keeps what it had, and
// the model is told the command ran without its change.
func TestUserUnsavedTextIsNeverWrittenForACommand(t *testing.T) {
	a := newAgentSession(t, saveScript, goFiles, lsptest.Config{ApplyEdit: true, SaveDocuments: true}, agentOpts{})
	before := a.open(t, "a.go")
	start := protocol.Position{Line: 0, Character: 0}
	if _, err := a.c.ChangeDocument(ctx(t), a.path("a.go"), lsptest.Change{Range: &protocol.Range{Start: start, End: start}, Text: "// the user's unsaved line\n"}); err != nil {
		t.Fatal(err)
	}
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi, then show a.go", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	if b := readFile(t, a.path("a.go")); b != before {
		t.Errorf("a.go on disk = %q; want the user's file untouched %q", b, before)
	}
	reqs := a.model.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "a.go has unsaved changes the user made in the editor") {
		t.Errorf("the model was not told the command ran without its change: %s", last)
	}
	if n := len(a.c.Snapshot().SaveRequests); n != 0 {
		t.Errorf("%d save requests; want none (the buffer holds the user's text)", n)
	}
}

// TestASlowSaveIsAskedAgainNextTime: a plugin whose save answers after
// the server stopped waiting (Emacs's before-save hook waiting on gopls)
// is still asked to save the next time; it is slow, not unable.
func TestASlowSaveIsAskedAgainNextTime(t *testing.T) {
	again := append(append([]fakemodel.Turn{}, saveScript...),
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c3", "edit_file", `{"path":"a.go","old_string":"\"hi\"","new_string":"\"hey\""}`)}},
		fakemodel.Turn{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, ToolCalls: []fakemodel.ToolCall{call("c4", "run_command", `{"command":"cat a.go"}`)}},
		fakemodel.Turn{Match: &fakemodel.Match{LastToolResult: "exit code"}, Text: "Done again.", FinishReason: "stop"},
	)
	release := make(chan struct{})
	var saves atomic.Int32
	cfg := lsptest.Config{ApplyEdit: true, SaveDocuments: true, BeforeSave: func() {
		if saves.Add(1) == 1 {
			<-release // the first save answers only after the server gave up on it
		}
	}}
	a := newAgentSession(t, again, goFiles, cfg, agentOpts{svc: lsp.ServiceOptions{SaveTimeout: 50 * time.Millisecond}})
	a.open(t, "a.go")
	if r, err := a.run(t, map[string]any{"prompt": "make Foo say hi, then show a.go", "mode": "edit"}); err != nil || r.Status != "completed" {
		t.Fatalf("first task: %+v, %v", r, err)
	}
	close(release)
	if r, err := a.run(t, map[string]any{"prompt": "make Foo say hey, then show a.go", "mode": "edit"}); err != nil || r.Status != "completed" {
		t.Fatalf("second task: %+v, %v", r, err)
	}
	if n := len(a.c.Snapshot().SaveRequests); n != 2 {
		t.Errorf("save requests = %d; want 2: the plugin that answered late is asked again", n)
	}
}
