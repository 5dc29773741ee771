package session_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools/hooks"
	"github.com/agentls/agentls/tools/mcp"
)

// userTask runs one edit task with settings changed by set; it returns
// the outcome, its report and the port that heard its events.
func userTask(t *testing.T, set func(*session.Settings), turns ...fakemodel.Turn) (*session.Outcome, string, *recPort, string) {
	t.Helper()
	root := t.TempDir()
	srv, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	s := session.Defaults()
	s.BaseURL, s.Model, s.Validate, s.Recordings, s.Approval = srv.URL(), "fake-model", "off", false, "auto"
	set(&s)
	h := session.New(s, session.Options{DBPath: filepath.Join(t.TempDir(), "agentls.db"), Getenv: func(string) string { return "" }})
	t.Cleanup(h.Close)
	h.SetRoots([]string{root})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port := &recPort{}
	out, err := h.Run(ctx, agent.TaskSpec{Kind: agent.KindEdit, Prompt: "do the work"}, port)
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(out.Report)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	return out, string(report), port, root
}

// problems are the Problem notes p heard.
func (p *recPort) problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		if e.Kind == agent.EventNote && e.Problem {
			out = append(out, e.Text)
		}
	}
	return out
}

// TestClaudeCodeLoggingHookInATask: Claude Code's documented logging hook,
// verbatim with its matcher, in the user's settings: every command the
// agent runs is appended to ~/.claude/bash-command-log.txt (a home folder
// outside the workspace) and the command runs.
func TestClaudeCodeLoggingHookInATask(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq IS NOT INSTALLED: Claude Code's logging hook cannot run; install it (scripts/setup does: apt-get install jq)")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	fake, err := os.MkdirTemp(home, ".agentls-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(fake) })
	if err := os.Mkdir(filepath.Join(fake, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", fake)
	cfg, err := hooks.Decode([]byte(`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "jq -r '.tool_input.command' >> ~/.claude/bash-command-log.txt"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, report, port, _ := userTask(t, func(s *session.Settings) { s.Hooks = cfg },
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"echo ran-it > out.txt"}`}}},
		fakemodel.Turn{Match: &fakemodel.Match{LastToolResult: "exit code 0"}, Text: "Done."},
	)
	b, err := os.ReadFile(filepath.Join(fake, ".claude", "bash-command-log.txt"))
	if err != nil || string(b) != "echo ran-it > out.txt\n" {
		t.Errorf("the log = %q, %v; want the command line", b, err)
	}
	if out.Result.Status != agent.StateCompleted {
		t.Errorf("task %s; want completed (the command ran)", out.Result.Status)
	}
	if p := port.problems(); len(p) != 0 {
		t.Errorf("problems shown: %q; want none", p)
	}
	if !strings.Contains(report, "| PreToolUse | run_command |") || !strings.Contains(report, "continued") {
		t.Errorf("the report does not list the hook run as continued:\n%s", report)
	}
}

// TestHookBlockIsShownWhole: a hook that blocks on purpose is shown, with
// its whole reason, in the task's progress and its report.
func TestHookBlockIsShownWhole(t *testing.T) {
	const reason = "rm is blocked by policy:\nmove files to trash/ instead"
	cmd := `echo "rm is blocked by policy:" >&2; echo "move files to trash/ instead" >&2; exit 2`
	_, report, port, _ := userTask(t, func(s *session.Settings) { s.Hooks = hook(hooks.PreToolUse, "Bash", cmd, 10) },
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"rm x"}`}}},
		fakemodel.Turn{Text: "A hook blocks rm."},
	)
	p := port.problems()
	if len(p) != 1 || !strings.Contains(p[0], "PreToolUse hook on run_command blocked") || !strings.HasSuffix(p[0], reason) {
		t.Errorf("problems shown: %q; want the block with its whole reason", p)
	}
	if !strings.Contains(report, reason) {
		t.Errorf("the report lacks the hook's reason:\n%s", report)
	}
}

// TestMCPStartFailureIsShownWithItsStderr: a server of the user's that
// does not start is shown in the task's progress and its report, with the
// end of its stderr.
func TestMCPStartFailureIsShownWithItsStderr(t *testing.T) {
	srv := mcp.ServerConfig{Name: "github", Command: "sh", Source: mcp.FromSettings,
		Args: []string{"-c", `echo "npm warn deprecated thing" >&2; echo "npm error 404 Not Found - @acme/github-mcp" >&2; exit 1`}}
	_, report, port, _ := userTask(t, func(s *session.Settings) { s.MCPServers = []mcp.ServerConfig{srv} },
		fakemodel.Turn{Text: "Nothing to do."},
	)
	const tail = "npm warn deprecated thing\nnpm error 404 Not Found - @acme/github-mcp"
	p := port.problems()
	if len(p) != 1 || !strings.Contains(p[0], `MCP: the MCP server "github" did not start`) || !strings.HasSuffix(p[0], tail) {
		t.Errorf("problems shown: %q; want the start failure with the end of its stderr", p)
	}
	if !strings.Contains(report, "## MCP servers") || !strings.Contains(report, tail) {
		t.Errorf("the report lacks the server's failure:\n%s", report)
	}
}
