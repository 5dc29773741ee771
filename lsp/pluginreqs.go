package lsp

import (
	"encoding/json"
	"slices"

	"github.com/agentls/agentls/lsp/server"
)

// An agentls plugin says in initialize which agentls/* requests it
// answers, in the LSP's place for extensions:
//
//	"capabilities": {"experimental": {"agentls": {"requests":
//	    ["agentls/saveDocuments", "agentls/diagnostics", "agentls/lsp"]}}}
//
// The server sends an agentls/* request only to a client that listed it,
// so an editor with standard LSP only (Helix, Kakoune, Zed, Sublime, Vim +
// ALE) never receives a method it does not know: it saves nothing on the
// agent's behalf, reports no diagnostics, and agentls's own language
// servers answer the language tools.

// pluginCapabilities is capabilities.experimental.agentls (answerStream,
// the agentls/answer notification's switch, is read in answer.go).
type pluginCapabilities struct {
	Requests []string `json:"requests"`
}

// clientAnswers reports whether the client declared that it answers the
// agentls request method.
func clientAnswers(srv *server.Server, method string) bool {
	raw := srv.ClientCapabilities().Experimental
	if len(raw) == 0 {
		return false
	}
	var exp struct {
		Agentls *pluginCapabilities `json:"agentls"`
	}
	if json.Unmarshal(raw, &exp) != nil || exp.Agentls == nil {
		return false
	}
	return slices.Contains(exp.Agentls.Requests, method)
}
