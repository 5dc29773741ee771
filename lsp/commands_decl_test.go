package lsp_test

import (
	"testing"

	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/server"
)

// TestTheServiceDeclaresEachCommandOnce: the service's commands have
// distinct names, so a server with them starts.
func TestTheServiceDeclaresEachCommandOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range lsp.NewService(lsp.ServiceOptions{}).Commands() {
		if seen[c.CommandName()] {
			t.Errorf("%s is declared twice", c.CommandName())
		}
		seen[c.CommandName()] = true
	}
	server.New(lsp.NewService(lsp.ServiceOptions{}).Options()...)
}

// TestExpectedArgumentsComeFromTheType: the InvalidParams text of a command
// is derived from its argument type, so it cannot drift from it.
func TestExpectedArgumentsComeFromTheType(t *testing.T) {
	for c, want := range map[string]string{
		lsp.RunCommand.Expect():    `{"prompt": string, "mode"?: "ask"|"edit"|"plan", "uri"?: DocumentUri, "range"?: Range, "followUp"?: taskId, "diagnostics"?: Diagnostic[]}`,
		lsp.CancelCommand.Expect(): `{"taskId": string}`,
	} {
		if c != want {
			t.Errorf("Expect() = %s; want %s", c, want)
		}
	}
}
