package lsp_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// hoverAt sends textDocument/hover at line:char of file and returns the
// hover's text ("" for a null hover).
func hoverAt(t *testing.T, c *lsptest.Client, file string, line, char uint32) (string, error) {
	t.Helper()
	var raw json.RawMessage
	err := c.Call(ctx(t), protocol.MethodTextDocumentHover, &protocol.HoverParams{
		TextDocumentPositionParams: protocol.TextDocumentPositionParams{
			TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(file)},
			Position:     protocol.Position{Line: line, Character: char},
		},
	}, &raw)
	if err != nil || string(raw) == "null" || len(raw) == 0 {
		return "", err
	}
	var h struct {
		Contents protocol.MarkupContent `json:"contents"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("hover %s: %v", raw, err)
	}
	return string(h.Contents.Kind) + ": " + h.Contents.Value, nil
}

// diagnosticText is a published diagnostic's message.
func diagnosticText(d protocol.Diagnostic) string {
	if m, ok := d.Message.(protocol.String); ok {
		return string(m)
	}
	return ""
}

// TestInstructionCommentsShowInAStandardClient: an editor with standard
// LSP only sees each instruction comment of an open document as a hint
// diagnostic that names the code action, and a hover on the comment says
// the same; once a task has run the comment and left it (here a question
// answered without a change), the diagnostic carries the summary and the
// hover the whole answer. Editing the comment away clears the diagnostic,
// as does closing the document; agentls's own note gets no "Fix with
// agent" action; no hover is offered off the comment.
func TestInstructionCommentsShowInAStandardClient(t *testing.T) {
	const answer = "Total already skips nothing: it adds every quantity.\n\nTo skip negative ones, add `if q < 0 { continue }` before `t += q`."
	for _, tc := range []struct {
		name     string
		markdown bool
	}{{"markdown hover", true}, {"plain-text hover", false}} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentSession(t, []fakemodel.Turn{{Text: answer, FinishReason: "stop", Times: -1}},
				map[string]string{"shop.go": shopGo}, lsptest.Config{Strict: true, ApplyEdit: true, HoverMarkdown: tc.markdown, CodeActionLiterals: true}, agentOpts{})
			if a.init.Capabilities.HoverProvider == nil {
				t.Fatalf("no hoverProvider offered to a standard client")
			}
			a.open(t, "shop.go")
			file := a.path("shop.go")
			u := string(lsptest.FileURI(file))

			st := a.c.Await(10*time.Second, "the instruction comment's hint", func(s *lsptest.State) bool { return len(s.Diagnostics[u].Diagnostics) == 1 })
			d := st.Diagnostics[u].Diagnostics[0]
			if d.Severity != protocol.DiagnosticSeverityHint || d.Range.Start.Line != 2 || d.Range.End.Line != 3 || !strings.Contains(diagnosticText(d), lsp.TitleRunComment) {
				t.Errorf("hint = %+v (%q); want a hint over lines 3-4 naming %q", d, diagnosticText(d), lsp.TitleRunComment)
			}
			if src, _ := d.Source.Get(); src != "agentls" {
				t.Errorf("hint source = %q", src)
			}
			if v, ok := st.Diagnostics[u].Version.Get(); !ok || v != 1 {
				t.Errorf("hint version = %v, %v; want the open document's version 1", v, ok)
			}

			// The hover on the comment, nothing off it.
			got, err := hoverAt(t, a.c, file, 3, 4)
			wantKind := "plaintext"
			if tc.markdown {
				wantKind = "markdown"
			}
			if err != nil || !strings.HasPrefix(got, wantKind+": ") || !strings.Contains(got, lsp.TitleRunComment) {
				t.Errorf("hover on the comment = %q, %v; want %s naming the code action", got, err, wantKind)
			}
			if got, err := hoverAt(t, a.c, file, 4, 6); err != nil || got != "" {
				t.Errorf("hover on code = %q, %v; want null", got, err)
			}

			// The code action lists no "Fix with agent" for agentls's own note.
			var raw []json.RawMessage
			if err := a.c.Call(ctx(t), protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
				TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(file)},
				Range:        d.Range,
				Context:      protocol.CodeActionContext{Diagnostics: []protocol.Diagnostic{d}},
			}, &raw); err != nil {
				t.Fatal(err)
			}
			for _, r := range raw {
				if strings.Contains(string(r), lsp.TitleFixPrefix) || strings.Contains(string(r), lsp.TitlePlanPrefix) {
					t.Errorf("code action on agentls's own note: %s", r)
				}
			}

			// Run it: the model answers without a change, so the comment
			// stays and shows the answer.
			acts := codeActionsAt(t, a.c, file, 2, 0)
			if len(acts) == 0 || acts[0].Title != lsp.TitleRunComment {
				t.Fatalf("code actions = %+v", acts)
			}
			out, _, err := a.c.ExecuteCommand(ctx(t), acts[0].Command, json.RawMessage(acts[0].Arguments[0]))
			if err != nil || !strings.Contains(string(out), `"commentRemoved":false`) {
				t.Fatalf("reply = %s, %v", out, err)
			}
			var reply lsp.RunReply
			if err := json.Unmarshal(out, &reply); err != nil {
				t.Fatal(err)
			}
			st = a.c.Await(10*time.Second, "the answer on the comment", func(s *lsptest.State) bool {
				ds := s.Diagnostics[u].Diagnostics
				return len(ds) == 1 && ds[0].Severity == protocol.DiagnosticSeverityInformation
			})
			msg := diagnosticText(st.Diagnostics[u].Diagnostics[0])
			if !strings.Contains(msg, "agentls: completed") || !strings.Contains(msg, "Total already skips nothing") || !strings.Contains(msg, "Hover here") {
				t.Errorf("answer diagnostic = %q", msg)
			}
			got, err = hoverAt(t, a.c, file, 2, 0)
			if err != nil || !strings.Contains(got, "agentls ran this instruction (completed).") || !strings.Contains(got, "if q < 0 { continue }") || !strings.Contains(got, "Report: "+strings.TrimPrefix(reply.Report, "file://")) {
				t.Errorf("hover after the task = %q, %v; want the whole answer and the report", got, err)
			}

			// An edited instruction is a new one: the hint again.
			edited := strings.Replace(shopGo, "skip negative", "ignore negative", 1)
			if _, err := a.c.ChangeDocument(ctx(t), file, lsptest.Change{Text: edited}); err != nil {
				t.Fatal(err)
			}
			a.c.Await(10*time.Second, "the hint of the edited instruction", func(s *lsptest.State) bool {
				ds := s.Diagnostics[u].Diagnostics
				return len(ds) == 1 && ds[0].Severity == protocol.DiagnosticSeverityHint
			})
			// The comment gone: the list is cleared.
			if _, err := a.c.ChangeDocument(ctx(t), file, lsptest.Change{Text: strings.Replace(edited, "agent:", "note:", 1)}); err != nil {
				t.Fatal(err)
			}
			a.c.Await(10*time.Second, "the hint cleared", func(s *lsptest.State) bool {
				p, ok := s.Diagnostics[u]
				return ok && len(p.Diagnostics) == 0
			})
			// Back, then the document closed: cleared again.
			if _, err := a.c.ChangeDocument(ctx(t), file, lsptest.Change{Text: shopGo}); err != nil {
				t.Fatal(err)
			}
			a.c.Await(10*time.Second, "the hint back", func(s *lsptest.State) bool { return len(s.Diagnostics[u].Diagnostics) == 1 })
			if err := a.c.CloseDocument(ctx(t), file); err != nil {
				t.Fatal(err)
			}
			st = a.c.Await(10*time.Second, "the hint cleared at close", func(s *lsptest.State) bool {
				p, ok := s.Diagnostics[u]
				return ok && len(p.Diagnostics) == 0
			})
			if _, ok := st.Diagnostics[u].Version.Get(); ok {
				t.Errorf("the clearing of a closed document carries a version")
			}
			a.checkNoKey(t)
		})
	}
}

// TestTypingPublishesTheHintsOnce: a burst of changes (typing) makes one
// publication, not one per keystroke; a document without instruction
// comments is never sent an empty list.
func TestTypingPublishesTheHintsOnce(t *testing.T) {
	a := newAgentSession(t, nil, map[string]string{"shop.go": shopGo, "plain.go": "package shop\n"}, lsptest.Config{Strict: true}, agentOpts{})
	a.open(t, "plain.go")
	a.open(t, "shop.go")
	file := a.path("shop.go")
	u := string(lsptest.FileURI(file))
	a.c.Await(10*time.Second, "the hint", func(s *lsptest.State) bool { return len(s.Diagnostics[u].Diagnostics) == 1 })
	before := a.c.Snapshot().Publications
	text := shopGo
	for i := 0; i < 20; i++ {
		text += "\n"
		if _, err := a.c.ChangeDocument(ctx(t), file, lsptest.Change{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	st := a.c.Await(10*time.Second, "the hint of the last version", func(s *lsptest.State) bool {
		v, _ := s.Diagnostics[u].Version.Get()
		return v == 21
	})
	if n := st.Publications - before; n > 3 {
		t.Errorf("%d publications for 20 changes typed at once; want them gathered", n)
	}
	if _, ok := st.Diagnostics[string(lsptest.FileURI(a.path("plain.go")))]; ok {
		t.Errorf("a document without instruction comments was sent diagnostics")
	}
}

// TestPluginClientGetsNoHintsOrHover: a client with an agentls plugin
// shows tasks itself: it is offered no hover and sent no diagnostics (no
// publication is even prepared when its documents change), and a hover
// request is MethodNotFound. A standard client's change, for contrast,
// prepares one.
func TestPluginClientGetsNoHintsOrHover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      lsptest.Config
		standard bool
	}{
		{"plugin", lsptest.Config{ApplyEdit: true, SaveDocuments: true, AnswerStream: true}, false},
		{"plugin with the answer stream only", lsptest.Config{ApplyEdit: true, AnswerStream: true}, false},
		{"standard", lsptest.Config{ApplyEdit: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentSession(t, nil, map[string]string{"shop.go": shopGo}, tc.cfg, agentOpts{})
			if offered := a.init.Capabilities.HoverProvider != nil; offered != tc.standard {
				t.Errorf("hoverProvider offered = %v; want %v", offered, tc.standard)
			}
			a.open(t, "shop.go")
			file := a.path("shop.go")
			_, err := hoverAt(t, a.c, file, 2, 0)
			var rpcErr *jsonrpc2.Error
			if notFound := errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.MethodNotFound; notFound == tc.standard {
				t.Errorf("hover: err = %v; want MethodNotFound exactly for a plugin client", err)
			}
			if _, err := a.c.ChangeDocument(ctx(t), file, lsptest.Change{Text: shopGo + "\n"}); err != nil {
				t.Fatal(err)
			}
			// The read loop handled the change before this request.
			if _, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandTasks, nil); err != nil {
				t.Fatal(err)
			}
			if tc.standard {
				a.c.Await(10*time.Second, "the hint", func(s *lsptest.State) bool { return s.Publications > 0 })
				return
			}
			if lsp.PendingHints(a.svc) {
				t.Errorf("a publication was prepared for a plugin client")
			}
			if n := a.c.Snapshot().Publications; n != 0 {
				t.Errorf("%d publishDiagnostics sent to a plugin client", n)
			}
		})
	}
}
