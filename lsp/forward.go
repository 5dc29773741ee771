package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/langserver"
)

// MethodLSP is the server-to-client request that forwards one LSP request
// to the other language servers the editor runs for the document (gopls,
// rust-analyzer, ... with the user's configuration): params {"method":
// "textDocument/references", "params": <its params>}, result their result,
// or null when none serves it (docs/lsp.md). The agentls plugins answer
// it; other clients answer MethodNotFound, and agentls's language tools
// then use agentls's own servers.
const MethodLSP = "agentls/lsp"

// ForwardParams are agentls/lsp's params.
type ForwardParams struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params" expect:"the LSP request's params"`
}

// LSPRequest declares agentls/lsp for the editor contract.
var LSPRequest = ClientRequest[ForwardParams, json.RawMessage]{Method: MethodLSP}

// forwardTimeout bounds one forwarded request (the editor's server may
// load the workspace first).
const forwardTimeout = 10 * time.Second

// ForwardLSP implements session.Port's ForwardLSP with agentls/lsp. A
// client that answers MethodNotFound is not asked again; nor is one that
// answers neither agentls/diagnostics nor agentls/saveDocuments (no
// plugin). One that leaves a request unanswered within forwardTimeout
// (its own server still loading) gets agentls's own servers for that one.
// An empty method sends nothing: it says whether forwarding may work.
func (p *taskPort) ForwardLSP(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	svc := p.svc
	if svc.saveDocs.unsupported.Load() || svc.diagnostics.unsupported.Load() || svc.forwardLSP.unsupported.Load() {
		return nil, fmt.Errorf("%s: %w", MethodLSP, session.ErrUnsupported)
	}
	if method == "" {
		return nil, nil
	}
	res, err := LSPRequest.ask(ctx, svc, ForwardParams{Method: method, Params: params}, forwardTimeout, &svc.forwardLSP)
	if errors.Is(err, errNotAnswered) {
		return nil, fmt.Errorf("%s: %w", MethodLSP, session.ErrUnsupported)
	}
	if err == nil && len(res) > maxForwarded {
		return nil, fmt.Errorf("%s %s: the editor's answer of %d bytes exceeds the limit of %d bytes", MethodLSP, method, len(res), maxForwarded)
	}
	return res, err
}

// maxForwarded bounds a forwarded answer as agentls's own language
// servers' messages are bounded (an answer over the editor connection's
// own frame limit never gets here: the wire discards it unread and fails
// the request).
const maxForwarded = langserver.MaxMessage
