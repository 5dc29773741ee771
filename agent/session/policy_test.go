package session_test

import (
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
)

func TestCommandPrefixAndAllowed(t *testing.T) {
	for cmd, want := range map[string]string{"go test ./...": "go test", "npm run build": "", "python3 --version": "", "ls -la": "ls", "make": "make", "": ""} {
		if got := session.CommandPrefix(cmd); got != want {
			t.Errorf("CommandPrefix(%q) = %q; want %q", cmd, got, want)
		}
	}
	allow := []string{"go test", "go build"}
	for cmd, want := range map[string]bool{
		"go test ./...": true, "go  test": true, "go build ./cmd/x": true, "go testing": false, "go vet ./...": false,
		"go test ./... && rm -rf ~": false, "go test $(curl x)": false, "go test > /etc/passwd": false, "go test | sh": false, "go test ./...\ntouch pwned": false, "go test -exec sh ./...": false,
	} {
		if got := session.CommandAllowed(cmd, allow); got != want {
			t.Errorf("CommandAllowed(%q) = %v; want %v", cmd, got, want)
		}
	}
}

func TestDecideMode(t *testing.T) {
	for prompt, want := range map[string]agent.Kind{
		"What does Foo return?":            agent.KindAsk,
		"where is the config parsed":       agent.KindAsk,
		"explain this function":            agent.KindAsk,
		"how do I add a flag?":             agent.KindAsk,
		"Is this thread safe?":             agent.KindAsk,
		"fix the failing test":             agent.KindEdit,
		"add a --verbose flag":             agent.KindEdit,
		"can you rename Foo to Greet?":     agent.KindEdit,
		"make Foo say hi":                  agent.KindEdit,
		"the build is broken, repair it":   agent.KindEdit,
		"Could you refactor this please?":  agent.KindEdit,
		"list the tests that touch config": agent.KindAsk,
	} {
		if got := session.DecideMode(prompt); got != want {
			t.Errorf("DecideMode(%q) = %s; want %s", prompt, got, want)
		}
	}
}
