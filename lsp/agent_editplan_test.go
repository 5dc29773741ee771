package lsp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// renameTurns: the model renames Greet to Hello with one rename_symbol
// call, then answers.
func renameTurns() []fakemodel.Turn {
	return []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "rename_symbol", `{"file":"greet/greet.go","symbol":"Greet","new_name":"Hello"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "renamed Greet to Hello via"}, Text: "Greet is now Hello everywhere.", FinishReason: "stop"},
	}
}

// appliedText applies the edits the editor was sent for file to before,
// as the editor does: what the editor was asked to make of the file.
func appliedText(t *testing.T, we protocol.WorkspaceEdit, file, before string) (text string, version *int32, found bool) {
	t.Helper()
	for _, dc := range we.DocumentChanges {
		tde, ok := dc.(*protocol.TextDocumentEdit)
		if !ok || tde.TextDocument.URI != lsptest.FileURI(file) {
			continue
		}
		var tes []protocol.TextEdit
		for _, e := range tde.Edits {
			te, ok := e.(*protocol.TextEdit)
			if !ok {
				t.Fatalf("%s: edit %T; want plain text edits", file, e)
			}
			tes = append(tes, *te)
		}
		after, err := lsptest.ApplyTextEdits(before, tes)
		if err != nil {
			t.Fatalf("%s: the edits sent do not apply: %v", file, err)
		}
		return after, tde.TextDocument.Version, true
	}
	return "", nil, false
}

// TestRenameWithTheDeclaringFileOpenAppliesToEveryFile: the declaring
// file is open in the editor and its caller is not (the usual case). The
// rename is one workspace/applyEdit with versioned documentChanges for
// both (the open file's version, null for the closed one), the editor
// loads and saves the closed file, and what every file holds afterwards,
// in the editor and on disk, is byte for byte what the edit sent said.
// The undo reverts both, the loaded file on disk as well.
func TestRenameWithTheDeclaringFileOpenAppliesToEveryFile(t *testing.T) {
	a := newAgentSession(t, renameTurns(), greetFiles(t), lsptest.Config{ApplyEdit: true, SaveDocuments: true}, agentOpts{})
	greetBefore := a.open(t, "greet/greet.go")
	mainBefore := readFile(t, a.path("main.go"))

	r, err := a.run(t, map[string]any{"prompt": "rename Greet to Hello everywhere", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v; want completed", r, err)
	}
	if got := strings.Join(r.ChangedFiles, ","); got != "greet/greet.go,main.go" {
		t.Errorf("changedFiles = %q; want greet/greet.go,main.go", got)
	}
	st := a.c.Snapshot()
	if len(st.AppliedEdits) != 1 || !st.AppliedEdits[0].Result.Applied {
		t.Fatalf("workspace/applyEdit requests = %+v; want one, applied", st.AppliedEdits)
	}
	we := st.AppliedEdits[0].Params.Edit
	if len(we.DocumentChanges) != 2 || len(we.Changes) != 0 {
		t.Fatalf("the edit has %d documentChanges and %d changes; want both files as documentChanges", len(we.DocumentChanges), len(we.Changes))
	}
	greetSent, greetVersion, ok1 := appliedText(t, we, a.path("greet/greet.go"), greetBefore)
	mainSent, mainVersion, ok2 := appliedText(t, we, a.path("main.go"), mainBefore)
	if !ok1 || !ok2 {
		t.Fatalf("the edit misses a file: greet.go %v, main.go %v", ok1, ok2)
	}
	if greetVersion == nil || *greetVersion != 1 {
		t.Errorf("greet.go (open at version 1) was sent with version %v", greetVersion)
	}
	if mainVersion != nil {
		t.Errorf("main.go (not open) was sent with version %d; want null", *mainVersion)
	}
	if !strings.Contains(greetSent, "func Hello(") || !strings.Contains(greetSent, `"Greet: hello, "`) || !strings.Contains(mainSent, "greet.Hello(\"world\")") {
		t.Errorf("the rename sent:\n%s\n%s", greetSent, mainSent)
	}
	if len(st.Loaded) != 1 || st.Loaded[0] != a.path("main.go") {
		t.Errorf("the editor loaded %v; want main.go only", st.Loaded)
	}
	if got, _, _ := a.c.Document(a.path("greet/greet.go")); got != greetSent {
		t.Errorf("the editor's greet.go differs from what was sent:\n%s", got)
	}
	if got, _, _ := a.c.Document(a.path("main.go")); got != mainSent {
		t.Errorf("the editor's main.go differs from what was sent:\n%s", got)
	}
	// The file the editor loaded for the edit was saved by it.
	if got := readFile(t, a.path("main.go")); got != mainSent {
		t.Errorf("main.go on disk differs from what was sent:\n%s", got)
	}
	saved := false
	for _, uris := range st.SaveRequests {
		for _, u := range uris {
			saved = saved || u == string(lsptest.FileURI(a.path("main.go")))
		}
	}
	if !saved {
		t.Errorf("agentls/saveDocuments requests %v; want main.go saved", st.SaveRequests)
	}

	// Undo goes through the same plan: one applyEdit, both files back.
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]string{"taskId": r.TaskID})
	var u lsp.UndoReply
	if err != nil || json.Unmarshal(raw, &u) != nil || len(u.Reverted) != 2 {
		t.Fatalf("agentls.undo = %s, %v; want both files reverted", raw, err)
	}
	if got, _, _ := a.c.Document(a.path("greet/greet.go")); got != greetBefore {
		t.Errorf("greet.go after undo:\n%s", got)
	}
	if got, _, _ := a.c.Document(a.path("main.go")); got != mainBefore {
		t.Errorf("main.go after undo, in the editor:\n%s", got)
	}
	// The file the editor loaded for the rename is reverted on disk too
	// (saved as the rename was): the disk never holds half the rename.
	if got := readFile(t, a.path("main.go")); got != mainBefore {
		t.Errorf("main.go after undo, on disk:\n%s", got)
	}
}

// TestRenameEmptyEditorAnswerFallsBackToOwnServer: the editor's plugin
// forwards the rename, but the editor has no server for Go files and
// answers an empty WorkspaceEdit ({"changes": {}}, VS Code without a Go
// extension). That is no answer: agentls's own gopls renames.
func TestRenameEmptyEditorAnswerFallsBackToOwnServer(t *testing.T) {
	for _, empty := range []string{`{"changes":{}}`, `{"documentChanges":[]}`, `{}`, `null`} {
		t.Run(empty, func(t *testing.T) {
			cfg := lsptest.Config{ApplyEdit: true, SaveDocuments: true, LSP: func(method string, _ json.RawMessage) (json.RawMessage, error) {
				if method == "textDocument/references" {
					return json.RawMessage(`[]`), nil
				}
				return json.RawMessage(empty), nil
			}}
			a := newAgentSession(t, renameTurns(), greetFiles(t), cfg, agentOpts{})
			a.open(t, "greet/greet.go")
			r, err := a.run(t, map[string]any{"prompt": "rename Greet to Hello everywhere", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("reply = %+v, %v; want completed", r, err)
			}
			forwarded := strings.Join(a.c.Snapshot().Forwarded, ",")
			if !strings.Contains(forwarded, "textDocument/rename") {
				t.Errorf("forwarded %q; want the rename asked of the editor first", forwarded)
			}
			reqs := a.model.Requests()
			last := string(reqs[len(reqs)-1].Body)
			if !strings.Contains(last, "renamed Greet to Hello via gopls: 4 edit(s) in 2 file(s)") {
				t.Errorf("the rename's result:\n%s", last)
			}
			if got, _, _ := a.c.Document(a.path("main.go")); !strings.Contains(got, "greet.Hello(") {
				t.Errorf("main.go in the editor after the rename:\n%s", got)
			}
			// The declaring file is an unsaved buffer: saved as a user would.
			if err := a.c.SaveDocument(ctx(t), a.path("greet/greet.go")); err != nil {
				t.Fatal(err)
			}
			build := exec.Command("go", "build", "./...")
			build.Dir = a.root
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build after the rename: %v\n%s", err, out)
			}
		})
	}
}

// TestMultiEditAppliedAsPlanned: edit_file with two edits matched against
// the original text (a→ab, b→c on "a b") gives "ab c", byte for byte the
// same in the editor's buffer (one applyEdit) and on disk (a closed file).
func TestMultiEditAppliedAsPlanned(t *testing.T) {
	files := map[string]string{"open.txt": "a b\n", "closed.txt": "a b\r\n"}
	edit := `{"path":"%s","edits":[{"old_string":"a","new_string":"ab"},{"old_string":"b","new_string":"c"}]}`
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", strings.Replace(edit, "%s", "open.txt", 1))}},
		{Match: &fakemodel.Match{LastToolResult: "edited open.txt"}, ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", strings.Replace(edit, "%s", "closed.txt", 1))}},
		{Match: &fakemodel.Match{LastToolResult: "edited closed.txt"}, Text: "Done.", FinishReason: "stop"},
	}, files, lsptest.Config{ApplyEdit: true}, agentOpts{})
	a.open(t, "open.txt")
	r, err := a.run(t, map[string]any{"prompt": "edit both", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v; want completed", r, err)
	}
	if got, _, _ := a.c.Document(a.path("open.txt")); got != "ab c\n" {
		t.Errorf("open.txt in the editor = %q; want %q", got, "ab c\n")
	}
	if b, err := os.ReadFile(a.path("closed.txt")); err != nil || string(b) != "ab c\r\n" {
		t.Errorf("closed.txt on disk = %q, %v; want %q", b, err, "ab c\r\n")
	}
	if n := len(a.c.Snapshot().AppliedEdits); n != 1 {
		t.Errorf("%d workspace/applyEdit requests; want 1 (the open file's)", n)
	}
}
