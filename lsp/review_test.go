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

// reviewFiles has a file whose edit below makes two hunks, far apart.
var reviewFiles = map[string]string{
	"main.go": "package main\n\nfunc One() int {\n\treturn 1\n}\n\n// unchanged\n// unchanged\n\nfunc Two() int {\n\treturn 2\n}\n",
}

// twoHunkEdit changes One and Two in one edit_file call.
const twoHunkEdit = `{"path":"main.go","edits":[{"old_string":"return 1","new_string":"return 10"},{"old_string":"return 2","new_string":"return 20"}]}`

// TestReviewBeforeApply: under the review setting, an edit of an open file
// reaches a client with change annotations as one workspace/applyEdit
// with an AnnotatedTextEdit and a needsConfirmation annotation per hunk;
// what the user keeps lands, and what the user rejects goes back to the
// model as the tool result (the rejected hunk's text, "must not retry").
// Review off sends plain text edits, as before.
func TestReviewBeforeApply(t *testing.T) {
	for _, tc := range []struct {
		name        string
		review      string
		keep        func(id protocol.ChangeAnnotationIdentifier) bool // nil keeps all
		annotated   bool
		wantText    string
		wantResult  []string // in the tool result the model reads next
		wantApplied bool
	}{
		{name: "review off: plain edits", review: "off", wantText: "return 10", wantApplied: true,
			wantResult: []string{"edited main.go: 2 replacements"}},
		{name: "all kept", review: "always", annotated: true, wantText: "return 20", wantApplied: true,
			wantResult: []string{"edited main.go: 2 replacements"}},
		{name: "second hunk rejected", review: "always", annotated: true, wantApplied: true,
			keep:       func(id protocol.ChangeAnnotationIdentifier) bool { return strings.HasSuffix(string(id), "#1") },
			wantText:   "return 10",
			wantResult: []string{"kept 1 of 2 changes", "-\\treturn 2\\n+\\treturn 20", "Do not make a rejected change again"}},
		{name: "everything rejected", review: "always", annotated: true, wantApplied: false,
			keep:       func(protocol.ChangeAnnotationIdentifier) bool { return false },
			wantText:   "return 1\n",
			wantResult: []string{"rejected the change; nothing in it was changed", "+\\treturn 10", "+\\treturn 20", "Do not make a rejected change again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := lsptest.Config{ApplyEdit: true, ChangeAnnotations: true}
			if tc.keep != nil {
				cfg.Review = func(id protocol.ChangeAnnotationIdentifier, _ protocol.ChangeAnnotation) bool { return tc.keep(id) }
			}
			a := newAgentSession(t, []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", twoHunkEdit)}},
				{Match: &fakemodel.Match{LastToolResult: "main.go"}, Text: "Done.", FinishReason: "stop"},
			}, reviewFiles, cfg, agentOpts{settings: map[string]any{"review": tc.review}})
			a.open(t, "main.go")
			r, err := a.run(t, map[string]any{"prompt": "make One and Two return tens", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("reply = %+v, %v", r, err)
			}
			st := a.c.Snapshot()
			if len(st.AppliedEdits) != 1 {
				t.Fatalf("applyEdit requests = %d; want 1", len(st.AppliedEdits))
			}
			ae := st.AppliedEdits[0]
			if ae.Result.Applied != tc.wantApplied {
				t.Errorf("applied = %v; want %v", ae.Result.Applied, tc.wantApplied)
			}
			checkAnnotations(t, ae.Params.Edit, tc.annotated)
			text, _, _ := a.c.Document(a.path("main.go"))
			if !strings.Contains(text, tc.wantText) {
				t.Errorf("buffer = %q; want it to contain %q", text, tc.wantText)
			}
			if tc.name == "second hunk rejected" {
				if strings.Contains(text, "return 20") {
					t.Errorf("buffer = %q; the rejected hunk was applied", text)
				}
				// The report lists what was rejected; undo reverts only
				// what was kept.
				// The summary the editor shows says so too.
				if !strings.Contains(r.Summary, "you rejected 1 of 2 changes in main.go") {
					t.Errorf("summary = %q; want it to say the user rejected 1 of 2 changes in main.go", r.Summary)
				}
				rep := readFile(t, strings.TrimPrefix(r.Report, "file://"))
				if !strings.Contains(rep, "## Rejected in review") || !strings.Contains(rep, "+\treturn 20") {
					t.Errorf("the report lacks the rejected hunk:\n%s", rep)
				}
				raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]string{"taskId": r.TaskID})
				if err != nil {
					t.Fatalf("agentls.undo = %s, %v", raw, err)
				}
				if text, _, _ := a.c.Document(a.path("main.go")); text != reviewFiles["main.go"] {
					t.Errorf("buffer after undo = %q; want the original", text)
				}
				// The task list says it was undone, not just "completed".
				raw, _, err = a.c.ExecuteCommand(ctx(t), lsp.CommandTasks, nil)
				var tasks []lsp.TaskInfo
				if err != nil || json.Unmarshal(raw, &tasks) != nil {
					t.Fatalf("agentls.tasks = %s, %v", raw, err)
				}
				if len(tasks) != 1 || tasks[0].ID != r.TaskID || !tasks[0].Undone || tasks[0].State != "completed" {
					t.Errorf("agentls.tasks after the undo = %s; want the task completed and undone", raw)
				}
			}
			reqs := a.model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model requests = %d; want 2", len(reqs))
			}
			body := string(reqs[1].Body)
			for _, w := range tc.wantResult {
				if !strings.Contains(body, w) {
					t.Errorf("the model's next request lacks %q:\n%s", w, body)
				}
			}
		})
	}
}

// checkAnnotations checks the shape of a reviewed (or plain) edit: one
// AnnotatedTextEdit per hunk, each annotation needing confirmation.
func checkAnnotations(t *testing.T, we protocol.WorkspaceEdit, annotated bool) {
	t.Helper()
	if len(we.DocumentChanges) != 1 {
		t.Fatalf("documentChanges = %d; want 1", len(we.DocumentChanges))
	}
	tde, ok := we.DocumentChanges[0].(*protocol.TextDocumentEdit)
	if !ok {
		t.Fatalf("documentChanges[0] is %T", we.DocumentChanges[0])
	}
	if !annotated {
		if len(we.ChangeAnnotations) != 0 {
			t.Errorf("changeAnnotations = %v; want none with review off", we.ChangeAnnotations)
		}
		for _, e := range tde.Edits {
			if _, ok := e.(*protocol.TextEdit); !ok {
				t.Errorf("edit %T; want a plain TextEdit", e)
			}
		}
		return
	}
	if len(tde.Edits) != 2 || len(we.ChangeAnnotations) != 2 {
		t.Fatalf("edits = %d, annotations = %d; want 2 and 2 (one per hunk)", len(tde.Edits), len(we.ChangeAnnotations))
	}
	seen := map[protocol.ChangeAnnotationIdentifier]bool{}
	for _, e := range tde.Edits {
		ae, ok := e.(*protocol.AnnotatedTextEdit)
		if !ok {
			t.Fatalf("edit %T; want an AnnotatedTextEdit", e)
		}
		ann, ok := we.ChangeAnnotations[ae.AnnotationID]
		if !ok || ann.NeedsConfirmation == nil || !*ann.NeedsConfirmation || ann.Label == "" || ann.Description == nil {
			t.Errorf("annotation %q = %+v; want a label, a description and needsConfirmation", ae.AnnotationID, ann)
		}
		if seen[ae.AnnotationID] {
			t.Errorf("annotation %q used twice", ae.AnnotationID)
		}
		seen[ae.AnnotationID] = true
		if strings.Count(ae.NewText, "\n") != 1 {
			t.Errorf("hunk %q: want one whole line", ae.NewText)
		}
	}
}

// TestReviewWithoutAnnotationsAsks: a client without change annotations
// (and any file not open in the editor) is asked per file with the diff,
// Keep or Reject; a rejection leaves the file as it was and reaches the
// model.
func TestReviewWithoutAnnotationsAsks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		open   bool
		answer string
		want   string // the file's text has it
		result string
	}{
		{"open, no annotations, rejected", true, "Reject", "return 1\n", "rejected the change"},
		{"not open, rejected", false, "Reject", "return 1\n", "rejected the change"},
		{"not open, kept", false, "Keep", "return 20", "edited main.go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			cfg := lsptest.Config{ApplyEdit: true, ShowMessageRequest: func(p protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
				asked = append(asked, p.Message)
				return &protocol.MessageActionItem{Title: tc.answer}
			}}
			a := newAgentSession(t, []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", twoHunkEdit)}},
				{Match: &fakemodel.Match{LastToolResult: "main.go"}, Text: "Done.", FinishReason: "stop"},
			}, reviewFiles, cfg, agentOpts{settings: map[string]any{"review": "always", "approval": "ask"}})
			if tc.open {
				a.open(t, "main.go")
			}
			r, err := a.run(t, map[string]any{"prompt": "make One and Two return tens", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("reply = %+v, %v", r, err)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "apply 2 changes to main.go") || !strings.Contains(asked[0], "+\treturn 20") {
				t.Errorf("questions = %q; want one review question with the diff", asked)
			}
			text := ""
			if tc.open {
				text, _, _ = a.c.Document(a.path("main.go"))
			} else {
				b, err := os.ReadFile(a.path("main.go"))
				if err != nil {
					t.Fatal(err)
				}
				text = string(b)
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("main.go = %q; want %q", text, tc.want)
			}
			if body := string(a.model.Requests()[1].Body); !strings.Contains(body, tc.result) {
				t.Errorf("the model's next request lacks %q:\n%s", tc.result, body)
			}
		})
	}
}

// TestReviewCannotBeTurnedOffByAWorkspaceSetting: review narrows what the
// agent may do, so a later settings change (which a workspace file may
// send) that turns it off needs the user's consent; dismissed, edits are
// still reviewed.
func TestReviewCannotBeTurnedOffByAWorkspaceSetting(t *testing.T) {
	cfg := lsptest.Config{ApplyEdit: true, ChangeAnnotations: true,
		Review: func(protocol.ChangeAnnotationIdentifier, protocol.ChangeAnnotation) bool { return false }}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", twoHunkEdit)}},
		{Match: &fakemodel.Match{LastToolResult: "main.go"}, Text: "Done.", FinishReason: "stop"},
	}, reviewFiles, cfg, agentOpts{settings: map[string]any{"review": "always"}})
	if err := a.c.Notify(ctx(t), protocol.MethodWorkspaceDidChangeConfiguration, map[string]any{"settings": map[string]any{"agentls": map[string]any{"review": "off"}}}); err != nil {
		t.Fatal(err)
	}
	a.open(t, "main.go")
	r, err := a.run(t, map[string]any{"prompt": "make One and Two return tens", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	st := a.c.Snapshot()
	asked := false
	for _, q := range st.MessageRequests {
		asked = asked || strings.Contains(q.Message, `review "off"`)
	}
	if !asked {
		t.Errorf("no consent question named review \"off\": %+v", st.MessageRequests)
	}
	if len(st.AppliedEdits) != 1 || len(st.AppliedEdits[0].Params.Edit.ChangeAnnotations) != 2 {
		t.Fatalf("applyEdit = %+v; want the edit still sent for review", st.AppliedEdits)
	}
	if text, _, _ := a.c.Document(a.path("main.go")); strings.Contains(text, "return 10") {
		t.Errorf("buffer = %q; the rejected edit was applied", text)
	}
}

// TestReviewedKeptPartIsSavedBeforeACommand: the part of a reviewed edit
// the user kept is the agent's text of the buffer, so a later task's
// command sees it on disk (saved for it), and the model is not told of
// the user's unsaved changes.
func TestReviewedKeptPartIsSavedBeforeACommand(t *testing.T) {
	cfg := lsptest.Config{ApplyEdit: true, ChangeAnnotations: true, WorkDoneProgress: true,
		Review: func(id protocol.ChangeAnnotationIdentifier, _ protocol.ChangeAnnotation) bool {
			return strings.HasSuffix(string(id), "#1")
		}}
	a := newAgentSession(t, []fakemodel.Turn{
		{Match: &fakemodel.Match{LastUser: "make One and Two return tens"}, ToolCalls: []fakemodel.ToolCall{call("a1", "edit_file", twoHunkEdit)}},
		{Match: &fakemodel.Match{LastToolResult: "kept 1 of 2"}, Text: "Kept One's change.", FinishReason: "stop"},
		{Match: &fakemodel.Match{LastUser: "check the package"}, ToolCalls: []fakemodel.ToolCall{call("b1", "run_command", `{"command":"grep -n return main.go"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "exit code"}, Text: "Checked.", FinishReason: "stop"},
	}, reviewFiles, cfg, agentOpts{settings: map[string]any{"review": "always"}})
	a.open(t, "main.go")
	for _, prompt := range []string{"make One and Two return tens", "check the package"} {
		if r, err := a.run(t, map[string]any{"prompt": prompt, "mode": "edit"}); err != nil || r.Status != "completed" {
			t.Fatalf("%s: reply = %+v, %v", prompt, r, err)
		}
	}
	out := lastToolResultOf(t, a)
	if !strings.Contains(out, "4:\treturn 10") || !strings.Contains(out, "11:\treturn 2") {
		t.Errorf("the command did not see the kept change on disk:\n%s", out)
	}
	if strings.Contains(out, "unsaved changes") {
		t.Errorf("the kept part was taken for the user's unsaved changes:\n%s", out)
	}
}
