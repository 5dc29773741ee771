package lsp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/server"
)

// TestTwoHandlersForOneCommandNameAreRefused: a second handler for a
// command name never silently replaces the first; building the server
// fails.
func TestTwoHandlersForOneCommandNameAreRefused(t *testing.T) {
	a := &server.Command[struct{}, any]{Name: "test.dup", Run: func(context.Context, *server.Invocation, struct{}) (any, error) { return "a", nil }}
	b := &server.Command[struct{}, any]{Name: "test.dup", Run: func(context.Context, *server.Invocation, struct{}) (any, error) { return "b", nil }}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "command test.dup is registered twice") {
			t.Fatalf("New with two handlers for test.dup: recover() = %v; want a refusal naming it", r)
		}
	}()
	server.New(server.WithCommands(a, b))
}

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
