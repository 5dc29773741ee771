package lsptest

import (
	"context"
	"time"

	"go.lsp.dev/protocol"
)

// QuickFixProbe is the request the editor-latency budgets and benchmarks
// time: textDocument/codeAction on characters 5-9 of line 31 of file,
// with an error diagnostic ("undefined: x") on the start of that line,
// which the agent face answers with actions of its own without asking
// the model.
func QuickFixProbe(file string) *protocol.CodeActionParams {
	return &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: FileURI(file)},
		Range:        protocol.Range{Start: protocol.Position{Line: 30, Character: 5}, End: protocol.Position{Line: 30, Character: 9}},
		Context: protocol.CodeActionContext{Diagnostics: []protocol.Diagnostic{{
			Range:    protocol.Range{Start: protocol.Position{Line: 30}, End: protocol.Position{Line: 30, Character: 4}},
			Severity: protocol.DiagnosticSeverityError, Message: protocol.String("undefined: x")}}},
	}
}

// TimeCodeAction sends params as textDocument/codeAction and returns its
// round trip. It fails the client's test when the request fails or is
// answered with no action.
func (c *Client) TimeCodeAction(ctx context.Context, params *protocol.CodeActionParams) time.Duration {
	c.t.Helper()
	t0 := time.Now()
	var acts []any
	if err := c.Call(ctx, protocol.MethodTextDocumentCodeAction, params, &acts); err != nil {
		c.t.Fatalf("codeAction: %v", err)
	}
	d := time.Since(t0)
	if len(acts) == 0 {
		c.t.Fatal("no code action")
	}
	return d
}
