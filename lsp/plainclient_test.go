package lsp_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

const shopGo = `package shop

// agent: make Total skip negative
// quantities
func Total(qs []int) int {
	t := 0
	for _, q := range qs {
		t += q
	}
	return t
}
`

// shopDone is shopGo after the scripted model's edit and the comment's
// removal.
const shopDone = `package shop

func Total(qs []int) int {
	t := 0
	for _, q := range qs {
		if q < 0 {
			continue
		}
		t += q
	}
	return t
}
`

// commentTurns: a command that needs the user's approval, the edit the
// comment asks for, the answer.
func commentTurns() []fakemodel.Turn {
	return []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command": "ls -a"}`)}},
		{ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", `{"path": "shop.go", "old_string": "\t\tt += q\n", "new_string": "\t\tif q < 0 {\n\t\t\tcontinue\n\t\t}\n\t\tt += q\n"}`)}},
		{Text: "Total now skips negative quantities.", FinishReason: "stop", Times: -1},
	}
}

// codeActionsAt asks for the code actions at line:char of file and
// returns them as commands (a CodeAction's command, or the Command).
func codeActionsAt(t *testing.T, c *lsptest.Client, file string, line, char uint32) []protocol.Command {
	t.Helper()
	pos := protocol.Position{Line: line, Character: char}
	var raw []json.RawMessage
	err := c.Call(ctx(t), protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(file)},
		Range:        protocol.Range{Start: pos, End: pos},
		Context:      protocol.CodeActionContext{Diagnostics: []protocol.Diagnostic{}},
	}, &raw)
	if err != nil {
		t.Fatalf("codeAction: %v", err)
	}
	var out []protocol.Command
	for _, r := range raw {
		var v struct {
			Title     string            `json:"title"`
			Command   json.RawMessage   `json:"command"`
			Arguments []json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatalf("code action %s: %v", r, err)
		}
		var name string
		if json.Unmarshal(v.Command, &name) == nil {
			// A Command.
			cmd := protocol.Command{Title: v.Title, Command: name}
			for _, a := range v.Arguments {
				cmd.Arguments = append(cmd.Arguments, protocol.LSPAny(a))
			}
			out = append(out, cmd)
			continue
		}
		var cmd struct {
			Title     string            `json:"title"`
			Command   string            `json:"command"`
			Arguments []json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(v.Command, &cmd); err != nil {
			t.Fatalf("code action %s: %v", r, err)
		}
		pc := protocol.Command{Title: v.Title, Command: cmd.Command}
		for _, a := range cmd.Arguments {
			pc.Arguments = append(pc.Arguments, protocol.LSPAny(a))
		}
		out = append(out, pc)
	}
	return out
}

// TestCommentActionStrictClient runs "Run agent on this comment" through a
// strict generic LSP client (lsptest's Strict: standard capabilities only,
// and any agentls/* message or any message outside what it declared fails
// the test), end to end with the scripted model: the action is listed at
// the comment, executed, the command approved through
// window/showMessageRequest, the edit applied through workspace/applyEdit
// (or on disk without it), the comment removed, and the answer shown with
// window/showDocument or named in window/showMessage.
func TestCommentActionStrictClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  lsptest.Config
	}{
		{"helix-like: applyEdit, showDocument, progress, literals", lsptest.Config{Strict: true, ApplyEdit: true, ShowDocument: true, WorkDoneProgress: true, CodeActionLiterals: true}},
		{"applyEdit only", lsptest.Config{Strict: true, ApplyEdit: true}},
		{"nothing declared: edits on disk", lsptest.Config{Strict: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.ShowMessageRequest = answer(lsp.ActionAllowOnce)
			a := newAgentSession(t, commentTurns(), map[string]string{"shop.go": shopGo, "go.mod": "module shop\n\ngo 1.22\n"}, cfg,
				agentOpts{settings: map[string]any{"approval": "ask"}})
			a.open(t, "shop.go")
			file := a.path("shop.go")

			if got := codeActionsAt(t, a.c, file, 5, 2); len(got) != 0 && got[0].Title == lsp.TitleRunComment {
				t.Errorf("the comment action is offered off the comment (line 6): %+v", got)
			}
			var run *protocol.Command
			for _, line := range []uint32{2, 3} { // both lines of the comment
				acts := codeActionsAt(t, a.c, file, line, 5)
				if len(acts) == 0 || acts[0].Title != lsp.TitleRunComment {
					t.Fatalf("code actions at line %d = %+v; want %q first", line+1, acts, lsp.TitleRunComment)
				}
				run = &acts[0]
			}
			if run.Command != lsp.CommandRunComment || len(run.Arguments) != 1 {
				t.Fatalf("command = %+v", run)
			}
			var args map[string]any
			if err := json.Unmarshal(run.Arguments[0], &args); err != nil || args["instruction"] != "make Total skip negative quantities" {
				t.Fatalf("arguments = %s (%v); want the comment's two lines as one instruction", run.Arguments[0], err)
			}

			raw, _, err := a.c.ExecuteCommand(ctx(t), run.Command, json.RawMessage(run.Arguments[0]))
			if err != nil {
				t.Fatalf("executeCommand: %v", err)
			}
			var reply struct {
				lsp.RunReply
				CommentRemoved bool `json:"commentRemoved"`
			}
			if err := json.Unmarshal(raw, &reply); err != nil {
				t.Fatal(err)
			}
			if reply.Status != "completed" || reply.Mode != "edit" || !reply.CommentRemoved || len(reply.ChangedFiles) != 1 {
				t.Fatalf("reply = %s", raw)
			}
			st := a.c.Snapshot()

			// The approval, through window/showMessageRequest.
			if len(st.MessageRequests) != 1 || !strings.Contains(st.MessageRequests[0].Message, "ls -a") {
				t.Errorf("approval questions = %+v; want one for ls -a", st.MessageRequests)
			}
			// The edit and the comment's removal: in the editor's buffer
			// through workspace/applyEdit, or on disk.
			text, _, _ := a.c.Document(file)
			if cfg.ApplyEdit {
				if text != shopDone {
					t.Errorf("buffer =\n%s\nwant\n%s", text, shopDone)
				}
				if len(st.AppliedEdits) != 2 || !strings.Contains(*st.AppliedEdits[1].Params.Label, "remove the instruction comment") {
					t.Errorf("applied edits = %+v; want the model's edit, then the comment's removal", st.AppliedEdits)
				}
			} else {
				if disk := readFile(t, file); disk != shopDone {
					t.Errorf("disk =\n%s\nwant\n%s", disk, shopDone)
				}
				if len(st.AppliedEdits) != 0 {
					t.Errorf("workspace/applyEdit sent to a client that did not declare it")
				}
			}
			// The answer: the report opens, or a message names it.
			if cfg.ShowDocument {
				if len(st.ShowDocuments) != 1 || string(st.ShowDocuments[0].URI) != reply.Report {
					t.Errorf("showDocument = %+v; want the report %s", st.ShowDocuments, reply.Report)
				}
			} else {
				path := strings.TrimPrefix(reply.Report, "file://")
				last := st.ShowMessages[len(st.ShowMessages)-1].Message
				t.Logf("the last message: %s", last)
				for _, want := range []string{strings.TrimSuffix(reply.Summary, "."), "the instruction comment was removed", "The whole answer: " + path} {
					if !strings.Contains(last, want) {
						t.Errorf("last message = %q; want it to say %q", last, want)
					}
				}
				if disk := !cfg.ApplyEdit; disk != strings.Contains(last, "changed on disk: shop.go") {
					t.Errorf("last message = %q; it names files changed on disk exactly when the client has no applyEdit", last)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("the report named is not there: %v", err)
				}
			}
			// agentls.undo reverts the task's edit and leaves the comment out
			// (its removal is not the task's change).
			if _, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]string{"taskId": reply.TaskID}); err != nil {
				t.Fatalf("undo: %v", err)
			}
			undone := strings.Replace(shopGo, "// agent: make Total skip negative\n// quantities\n", "", 1)
			got, _, _ := a.c.Document(file)
			if !cfg.ApplyEdit {
				got = readFile(t, file)
			}
			if got != undone {
				t.Errorf("after undo:\n%s\nwant\n%s", got, undone)
			}
			a.checkNoKey(t)
		})
	}
}

// TestCommentActionLeavesTouchedComment: a comment the model's edit changed
// stays as the model left it; a task that changed nothing leaves the
// comment; a comment gone since the code action was listed is refused
// with a message that says so.
func TestCommentActionLeavesTouchedComment(t *testing.T) {
	t.Run("model rewrote the comment", func(t *testing.T) {
		a := newAgentSession(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path": "shop.go", "old_string": "// agent: make Total skip negative\n// quantities\n", "new_string": "// Total skips negative quantities.\n"}`)}},
			{Text: "Done.", FinishReason: "stop", Times: -1},
		}, map[string]string{"shop.go": shopGo}, lsptest.Config{Strict: true, ApplyEdit: true}, agentOpts{})
		a.open(t, "shop.go")
		acts := codeActionsAt(t, a.c, a.path("shop.go"), 2, 0)
		raw, _, err := a.c.ExecuteCommand(ctx(t), acts[0].Command, json.RawMessage(acts[0].Arguments[0]))
		if err != nil || !strings.Contains(string(raw), `"commentRemoved":false`) {
			t.Fatalf("reply = %s, %v", raw, err)
		}
		if text, _, _ := a.c.Document(a.path("shop.go")); !strings.Contains(text, "// Total skips negative quantities.\nfunc Total") {
			t.Errorf("buffer =\n%s", text)
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		a := newAgentSession(t, []fakemodel.Turn{{Text: "It already does.", FinishReason: "stop", Times: -1}},
			map[string]string{"shop.go": shopGo}, lsptest.Config{Strict: true, ApplyEdit: true}, agentOpts{})
		a.open(t, "shop.go")
		acts := codeActionsAt(t, a.c, a.path("shop.go"), 2, 0)
		raw, _, err := a.c.ExecuteCommand(ctx(t), acts[0].Command, json.RawMessage(acts[0].Arguments[0]))
		if err != nil || !strings.Contains(string(raw), `"commentRemoved":false`) {
			t.Fatalf("reply = %s, %v", raw, err)
		}
		if text, _, _ := a.c.Document(a.path("shop.go")); text != shopGo {
			t.Errorf("buffer changed:\n%s", text)
		}
	})
	t.Run("comment gone", func(t *testing.T) {
		a := newAgentSession(t, nil, map[string]string{"shop.go": shopGo}, lsptest.Config{Strict: true, ApplyEdit: true}, agentOpts{})
		a.open(t, "shop.go")
		acts := codeActionsAt(t, a.c, a.path("shop.go"), 2, 0)
		if _, err := a.c.ChangeDocument(ctx(t), a.path("shop.go"), lsptest.Change{Text: strings.Replace(shopGo, "agent:", "note:", 1)}); err != nil {
			t.Fatal(err)
		}
		_, _, err := a.c.ExecuteCommand(ctx(t), acts[0].Command, json.RawMessage(acts[0].Arguments[0]))
		if err == nil || !strings.Contains(err.Error(), "no longer in shop.go") {
			t.Fatalf("err = %v; want the comment named as gone", err)
		}
	})
}
