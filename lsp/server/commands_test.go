package server_test

import (
	"context"
	"strings"
	"testing"

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
