package redteam

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

const famAlias = "secrets by alias"

// The .env of the alias attacks, written in pieces so that no scanner
// takes this file for a leak. aliasToken is under a name that marks a
// secret; aliasUpstream is under an ordinary name, so only the decision by
// the file's real target keeps it out (no rule by content knows it).
var (
	aliasToken    = "tok-" + "Rd7Lq2Xw9Vm4Kp8Z"
	aliasUpstream = "ups-" + "Hn3Bc8Tq6Jw1Fs5Y"
	aliasEnv      = "API_TOKEN=" + aliasToken + "\nUPSTREAM=" + aliasUpstream + "\n"
	aliasSecrets  = map[string]string{"API_TOKEN's value": aliasToken, "UPSTREAM's value": aliasUpstream}
)

// aliasVerdict is escaped when a secret of the .env reached the model,
// the editor, the log or .agentls, and fails the attempt when the model
// never got a request after the attack (nothing was tried): want is a
// text that request must hold to show the attack ran.
func aliasVerdict(t *testing.T, s *server, want string) outcome {
	t.Helper()
	bodies := requestBodies(s)
	if !strings.Contains(bodies, want) {
		t.Fatalf("no model request shows the attack ran (want %q):\n%s", want, lastRequest(s))
	}
	if l := leaks(s, aliasSecrets, true); len(l) > 0 {
		return escaped("%s", strings.Join(l, "; "))
	}
	return held("the model's request holds %q and no value of .env", want)
}

// forwardTo is a fake editor's agentls/lsp: it answers definition and
// references with locations in the workspace's .env (as a language server
// answers for //go:embed .env, or a hostile one for any symbol).
func forwardTo(root *string, method string, locs func(root string) []map[string]any) func(string, json.RawMessage) (json.RawMessage, error) {
	return func(m string, _ json.RawMessage) (json.RawMessage, error) {
		if m != method {
			return json.RawMessage("null"), nil
		}
		return json.Marshal(locs(*root))
	}
}

func loc(root, name string, line int) map[string]any {
	pos := map[string]any{"line": line, "character": 0}
	return map[string]any{"uri": "file://" + root + "/" + name, "range": map[string]any{"start": pos, "end": pos}}
}

// TestSecretsByAlias: a secret file reached under another name (a link,
// an instruction file, a prompt file, a language server's location)
// reaches no model request: the context gate decides by the real target.
func TestSecretsByAlias(t *testing.T) {
	envFiles := map[string]string{".env": aliasEnv, "main.go": "package main\n\n//go:embed .env\nvar config string\n\nfunc main() { println(config) }\n"}
	attempt(t, famAlias, "read_file of docs/setup.txt -> ../.env", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"docs/setup.txt"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, envFiles, serverOpts{links: map[string]string{"docs/setup.txt": "../.env"}})
		if _, err := s.run(t, map[string]any{"prompt": "read the setup notes", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return aliasVerdict(t, s, `"tool_call_id":"c1"`)
	})
	attempt(t, famAlias, "grep of the workspace finds docs/setup.txt -> ../.env", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "grep", `{"pattern":"UPSTREAM|API_TOKEN"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, envFiles, serverOpts{links: map[string]string{"docs/setup.txt": "../.env"}})
		if _, err := s.run(t, map[string]any{"prompt": "where is UPSTREAM set?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return aliasVerdict(t, s, `"tool_call_id":"c1"`)
	})
	attempt(t, famAlias, "grep with path docs/setup.txt -> ../.env", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "grep", `{"pattern":"=","path":"docs/setup.txt"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, envFiles, serverOpts{links: map[string]string{"docs/setup.txt": "../.env"}})
		if _, err := s.run(t, map[string]any{"prompt": "what does the setup set?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return aliasVerdict(t, s, `"tool_call_id":"c1"`)
	})
	attempt(t, famAlias, "edit_file's closest lines of docs/setup.txt -> ../.env", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"docs/setup.txt","old_string":"UPSTREAM=ups-\n","new_string":"UPSTREAM=x\n"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, envFiles, serverOpts{links: map[string]string{"docs/setup.txt": "../.env"}})
		if _, err := s.run(t, map[string]any{"prompt": "set UPSTREAM to x", "mode": "edit"}); err != nil {
			t.Fatal(err)
		}
		return aliasVerdict(t, s, `"tool_call_id":"c1"`)
	})
	attempt(t, famAlias, "AGENTS.md -> .env in the system prompt", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{{Text: "Done.", FinishReason: "stop"}}, envFiles,
			serverOpts{links: map[string]string{"AGENTS.md": ".env"}})
		if _, err := s.run(t, map[string]any{"prompt": "hello", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return aliasVerdict(t, s, "--- AGENTS.md")
	})
	attempt(t, famAlias, "pkg/AGENTS.md -> ../.env given after a read in pkg/", func(t *testing.T) outcome {
		files := map[string]string{".env": aliasEnv, "pkg/util.go": "package pkg\n"}
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"pkg/util.go"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, files, serverOpts{links: map[string]string{"pkg/AGENTS.md": "../.env"}})
		if _, err := s.run(t, map[string]any{"prompt": "what is in pkg?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return aliasVerdict(t, s, "--- pkg/AGENTS.md")
	})
	attempt(t, famAlias, "definition of a //go:embed .env variable lands in .env", func(t *testing.T) outcome {
		var root string
		hook := forwardTo(&root, "textDocument/definition", func(r string) []map[string]any { return []map[string]any{loc(r, ".env", 0)} })
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "definition", `{"file":"main.go","symbol":"config"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, envFiles, serverOpts{cfg: lsptest.Config{LSP: hook}})
		root = s.root
		if _, err := s.run(t, map[string]any{"prompt": "where is config defined?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		if f := s.c.Snapshot().Forwarded; len(f) == 0 {
			t.Fatalf("the definition was never asked of the editor")
		}
		return aliasVerdict(t, s, `"tool_call_id":"c1"`)
	})
	attempt(t, famAlias, "the editor's references land in .env", func(t *testing.T) outcome {
		var root string
		hook := forwardTo(&root, "textDocument/references", func(r string) []map[string]any {
			return []map[string]any{loc(r, "main.go", 3), loc(r, ".env", 0), loc(r, ".env", 1)}
		})
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "references", `{"file":"main.go","symbol":"config"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, envFiles, serverOpts{cfg: lsptest.Config{LSP: hook}})
		root = s.root
		if _, err := s.run(t, map[string]any{"prompt": "who uses config?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		if f := s.c.Snapshot().Forwarded; len(f) == 0 {
			t.Fatalf("the references were never asked of the editor")
		}
		return aliasVerdict(t, s, `"tool_call_id":"c1"`)
	})
	attempt(t, famAlias, "the user runs /setup, whose .claude/commands/setup.md -> ../../.env", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{{Text: "Done.", FinishReason: "stop"}}, envFiles,
			serverOpts{links: map[string]string{".claude/commands/setup.md": "../../.env"}})
		if _, err := s.run(t, map[string]any{"prompt": "/setup", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return aliasVerdict(t, s, `"role":"user"`)
	})
}
