package lsptest

import (
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// strictMethods are the server-to-client methods of the LSP specification
// (3.17) a generic client accepts, each with the check of what the client
// must have declared for it (nil: always allowed).
var strictMethods = map[string]func(cfg Config) bool{
	protocol.MethodWindowShowMessage:              nil,
	protocol.MethodWindowLogMessage:               nil,
	protocol.MethodWindowShowMessageRequest:       nil,
	protocol.MethodTelemetryEvent:                 nil,
	protocol.MethodTextDocumentPublishDiagnostics: nil,
	protocol.MethodProgress:                       nil, // tokens: checked in progress
	protocol.MethodWindowWorkDoneProgressCreate:   func(cfg Config) bool { return cfg.WorkDoneProgress },
	protocol.MethodWindowShowDocument:             func(cfg Config) bool { return cfg.ShowDocument },
	protocol.MethodWorkspaceApplyEdit:             func(cfg Config) bool { return cfg.ApplyEdit },
}

// strictCheck fails the test (a violation) for a message a generic client
// that declared cfg must never receive, and answers a request for such a
// method with MethodNotFound, as a generic client would.
func (c *Client) strictCheck(req *jsonrpc2.Request) error {
	method := req.Method()
	allowed, known := strictMethods[method]
	switch {
	case strings.HasPrefix(method, "agentls/"):
		c.violation("strict client: the server sent the agentls-specific %s to a client that implements nothing of agentls", method)
	case !known:
		c.violation("strict client: the server sent %s, which the client did not declare", method)
	case allowed != nil && !allowed(c.cfg):
		c.violation("strict client: the server sent %s although the client did not declare the capability for it", method)
	default:
		return nil
	}
	if req.IsCall() {
		return jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "strict client: %s not supported", method)
	}
	return nil
}
