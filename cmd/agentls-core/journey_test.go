package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/lsp/lsptest"
)

// TestFirstDayOnTheCommandLine: a user sets agentls up as the docs say (an
// MCP server and Claude Code's documented logging hook in the user
// settings file, a custom command in .agentls/commands) and runs tasks
// with `agentls run`. One task renames a function declared in one file
// and called in another (agentls's own gopls), calls the MCP server's
// tool and runs a command, which the hook logs in the user's home folder;
// a second task is the custom command. Each of the four reaches where the
// user looks.
func TestFirstDayOnTheCommandLine(t *testing.T) {
	for _, tool := range []string{"gopls", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (make install installs it): %v", tool, err)
		}
	}
	// Built (once per test binary) in the real user's cache folder, before
	// HOME moves: a later test of this binary uses the same path.
	mcpServer := lsptest.MCPTestServer(t)
	home, cfg, ws := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	// A Claude Code user has ~/.claude already.
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{
		"approval": "auto",
		"validate": "off",
		"mcpServers": map[string]any{
			"test": map[string]any{"command": mcpServer},
		},
		// Claude Code's documented logging hook, unchanged.
		"hooks": map[string]any{
			"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{
				map[string]any{"type": "command", "command": "jq -r '.tool_input.command' >> ~/.claude/bash-command-log.txt"},
			}}},
		},
	}
	b, _ := json.Marshal(settings)
	writeFiles(t, filepath.Join(cfg, "agentls"), map[string]string{"settings.json": string(b)})
	writeFiles(t, ws, map[string]string{
		"go.mod":                     "module example.com/day\n\ngo 1.22\n",
		"greet.go":                   "package main\n\n// Greet greets name.\nfunc Greet(name string) string { return \"hello \" + name }\n",
		"main.go":                    "package main\n\nfunc main() { println(Greet(\"you\")) }\n",
		".agentls/commands/hello.md": "---\ndescription: Say hello\nargument-hint: <name>\n---\nSay hello to $ARGUMENTS in one line.\n",
	})

	model := startModel(t, `[
	  {"toolCalls":[{"name":"rename_symbol","arguments":{"file":"greet.go","symbol":"Greet","new_name":"Welcome"}}]},
	  {"toolCalls":[{"name":"mcp__test__echo","arguments":{"text":"from the MCP server"}}]},
	  {"toolCalls":[{"name":"run_command","arguments":{"command":"echo journey-logged"}}]},
	  {"text":"Renamed Greet to Welcome, asked the MCP server and ran the command."},
	  {"match":{"lastUser":"Say hello to world"},"text":"Hello, world!"}
	]`)
	var out, errb bytes.Buffer
	code := mainExit([]string{"run", "--workspace", ws, "--edit", "Rename Greet to Welcome, echo through the MCP server, then run echo"},
		stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("agentls run: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}

	// 1. The rename reached both files (the caller never opened).
	for name, want := range map[string]string{"greet.go": "func Welcome(", "main.go": "println(Welcome(\"you\"))"} {
		if got, _ := os.ReadFile(filepath.Join(ws, name)); !strings.Contains(string(got), want) {
			t.Errorf("%s after the task:\n%s\nwant %q", name, got, want)
		}
	}
	// 2. The MCP server's tool answered, and the model read its answer.
	reqs := model.Requests()
	if len(reqs) < 4 || !strings.Contains(string(reqs[2].Body), "echo: from the MCP server") {
		t.Errorf("the model's third request lacks the MCP tool's answer (%d requests)", len(reqs))
	}
	// 3. The logging hook ran as the user's program: the command is in
	// the log in the home folder, and the command ran.
	logged, err := os.ReadFile(filepath.Join(home, ".claude", "bash-command-log.txt"))
	if err != nil || !strings.Contains(string(logged), "echo journey-logged") {
		t.Errorf("~/.claude/bash-command-log.txt = %q, %v; want the command logged", logged, err)
	}
	if len(reqs) < 4 || !strings.Contains(string(reqs[3].Body), "journey-logged") {
		t.Errorf("the command's output did not reach the model: the hook blocked it?\nstderr: %s", errb.String())
	}

	// 4. The custom command.
	out.Reset()
	errb.Reset()
	code = mainExit([]string{"run", "--workspace", ws, "/hello world"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 || !strings.Contains(out.String(), "Hello, world!") {
		t.Fatalf("agentls run /hello world: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
}
