package lsp_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// TestApplyEditThroughHarness: the fake editor applies workspace/applyEdit
// to its copy with a version check, refuses a stale version with a reason,
// and sends didChange so the server's buffer follows.
func TestApplyEditThroughHarness(t *testing.T) {
	type editArgs struct {
		File    string `json:"file"`
		Version int32  `json:"version"`
	}
	edit := &server.Command[editArgs, any]{Name: "test.edit", Run: func(ctx context.Context, inv *server.Invocation, a editArgs) (any, error) {
		v := a.Version
		te := &protocol.TextEdit{Range: protocol.Range{Start: protocol.Position{Line: 0, Character: 0}, End: protocol.Position{Line: 0, Character: 1}}, NewText: "界"}
		return inv.Server.Client().ApplyEdit(ctx, &protocol.ApplyWorkspaceEditParams{Edit: protocol.WorkspaceEdit{
			DocumentChanges: []protocol.DocumentChange{&protocol.TextDocumentEdit{
				TextDocument: protocol.OptionalVersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(a.File)}, Version: &v},
				Edits:        []protocol.TextDocumentEditElement{te},
			}},
		}})
	}}
	s := initialized(t, lsptest.Config{ApplyEdit: true}, server.WithCommands(edit))
	name := filepath.Join(t.TempDir(), "e.txt")
	if err := s.c.OpenDocument(ctx(t), name, "plaintext", "x😀\n"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.edit", editArgs{File: name, Version: 7}); err != nil {
		t.Fatal(err)
	}
	st := s.c.Snapshot()
	if len(st.AppliedEdits) != 1 || st.AppliedEdits[0].Result.Applied || st.AppliedEdits[0].Result.FailureReason == nil {
		t.Fatalf("stale edit = %+v; want refused with a reason", st.AppliedEdits)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.edit", editArgs{File: name, Version: 1}); err != nil {
		t.Fatal(err)
	}
	if text, version, _ := s.c.Document(name); text != "界😀\n" || version != 2 {
		t.Errorf("client copy = %q v%d; want the edit applied at v2", text, version)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "sync"}); err != nil {
		t.Fatal(err)
	}
	if doc, _ := s.srv.Buffers().Get(name); doc.Text != "界😀\n" || doc.Version != 2 {
		t.Errorf("server buffer = %q v%d; want it to follow the client's didChange", doc.Text, doc.Version)
	}
}
