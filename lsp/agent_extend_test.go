package lsp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// extendFiles is a workspace with two custom commands: one that takes
// arguments, one that works on the selection.
var extendFiles = map[string]string{
	"a.go": "package a\n\n// Foo greets.\nfunc Foo() string { return \"hello\" }\n",
	".agentls/commands/review.md": "---\ndescription: Review a file for bugs\nargument-hint: <file>\nmode: ask\n---\n" +
		"Review $ARGUMENTS for bugs and list them by severity.\n",
	".agentls/commands/doc.md": "---\ndescription: Document the selection\n---\nWrite a doc comment for:\n$SELECTION\n",
}

// TestCustomCommandReachesTheModelThroughAgentlsRun: agentls.prompts lists
// the prompt files; agentls.run with "/review a.go" sends the file's
// prompt, with $ARGUMENTS replaced, to the model; a command that uses the
// selection is a code action on a selection, and its prompt carries the
// selected text.
func TestCustomCommandReachesTheModelThroughAgentlsRun(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no prompt files of the user running the test
	a := newAgentSession(t, []fakemodel.Turn{
		{Match: &fakemodel.Match{LastUser: "Review a.go for bugs and list them by severity."}, Text: "No bugs in a.go."},
		{Match: &fakemodel.Match{LastUser: "func Foo() string"}, Text: "// Foo returns a greeting."},
	}, extendFiles, lsptest.Config{}, agentOpts{})

	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandPrompts, map[string]any{})
	var ps []map[string]any
	if err != nil || json.Unmarshal(raw, &ps) != nil || len(ps) != 2 {
		t.Fatalf("agentls.prompts = %s, %v; want the two commands", raw, err)
	}
	if ps[1]["name"] != "review" || ps[1]["description"] != "Review a file for bugs" || ps[1]["argumentHint"] != "<file>" || ps[1]["scope"] != "workspace" {
		t.Errorf("agentls.prompts[1] = %v", ps[1])
	}

	r, err := a.run(t, map[string]any{"prompt": "/review a.go"})
	if err != nil || r.Status != "completed" || r.Answer != "No bugs in a.go." || r.Mode != "ask" {
		t.Fatalf("/review: %+v, %v; want the scripted answer to the expanded prompt, in the command's mode (ask)", r, err)
	}

	text := a.open(t, "a.go")
	sel := protocol.Range{Start: protocol.Position{Line: 3, Character: 0}, End: protocol.Position{Line: 3, Character: uint32(len("func Foo() string"))}}
	var acts []protocol.Command // the fake editor takes commands, not code action literals
	if err := a.c.Call(ctx(t), protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(a.path("a.go"))}, Range: sel,
	}, &acts); err != nil {
		t.Fatal(err)
	}
	var doc *protocol.Command
	for i, ca := range acts {
		if strings.HasPrefix(ca.Title, lsp.TitlePromptPrefix+"doc") {
			doc = &acts[i]
		}
		if strings.HasPrefix(ca.Title, lsp.TitlePromptPrefix+"review") {
			t.Errorf("code action %q: /review does not use the selection", ca.Title)
		}
	}
	if doc == nil {
		t.Fatalf("no code action for /doc among %d; text %q", len(acts), text)
	}
	var args lsp.RunArgs
	if err := json.Unmarshal(doc.Arguments[0], &args); err != nil {
		t.Fatal(err)
	}
	r, err = a.run(t, args)
	if err != nil || r.Status != "completed" || r.Answer != "// Foo returns a greeting." {
		t.Fatalf("/doc on the selection: %+v, %v; want the selected text in the prompt", r, err)
	}
}

// TestAgentlsToolsListsEveryToolAndHook: agentls.tools lists the tools a
// task's model gets, with their source, and the hooks of the settings.
func TestAgentlsToolsListsEveryToolAndHook(t *testing.T) {
	hooks := map[string]any{"PreToolUse": []any{map[string]any{"matcher": "run_command", "hooks": []any{map[string]any{"type": "command", "command": "./check.sh", "timeout": 5}}}}}
	a := newAgentSession(t, nil, goFiles, lsptest.Config{}, agentOpts{settings: map[string]any{"hooks": hooks}})
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandTools, nil)
	var l lsp.ToolsReply
	if err != nil || json.Unmarshal(raw, &l) != nil {
		t.Fatalf("agentls.tools = %s, %v", raw, err)
	}
	byName := map[string]string{}
	for _, tl := range l.Tools {
		byName[tl.Name] = tl.Source
	}
	for _, name := range []string{"read_file", "grep", "list_files", "edit_file", "write_file", "run_command", "update_plan"} {
		if byName[name] != "built-in" {
			t.Errorf("tool %s: source %q; want listed as built-in (all: %v)", name, byName[name], byName)
		}
	}
	if len(l.Hooks) != 1 || l.Hooks[0].Event != "PreToolUse" || l.Hooks[0].Command != "./check.sh" || l.Hooks[0].Timeout != "5s" {
		t.Errorf("hooks = %+v; want the PreToolUse hook", l.Hooks)
	}
}
