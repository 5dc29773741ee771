package lsp

import (
	"encoding/json"
	"slices"

	"go.lsp.dev/protocol"

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

// pluginCapabilities is capabilities.experimental.agentls: the agentls/*
// requests a client answers, and whether it takes the answer stream
// (agentls/answer).
type pluginCapabilities struct {
	Requests     []string `json:"requests,omitempty"`
	AnswerStream bool     `json:"answerStream,omitempty"`
}

// PluginCapabilities is the experimental capability that declares the
// agentls/* requests a client answers and whether it takes the answer
// stream (for plugins written in Go, and tests).
func PluginCapabilities(answerStream bool, requests ...string) json.RawMessage {
	b, _ := json.Marshal(map[string]pluginCapabilities{"agentls": {Requests: requests, AnswerStream: answerStream}})
	return b
}

// declared returns what the client declared in
// capabilities.experimental.agentls (zero when nothing or garbage).
func declared(caps protocol.ClientCapabilities) pluginCapabilities {
	var exp struct {
		Agentls pluginCapabilities `json:"agentls"`
	}
	if len(caps.Experimental) == 0 || json.Unmarshal(caps.Experimental, &exp) != nil {
		return pluginCapabilities{}
	}
	return exp.Agentls
}

// clientAnswers reports whether the client declared that it answers the
// agentls request method.
func clientAnswers(srv *server.Server, method string) bool {
	return slices.Contains(declared(srv.ClientCapabilities()).Requests, method)
}
