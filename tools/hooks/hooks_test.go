package hooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		matcher, tool string
		want          bool
	}{
		{"", "run_command", true},
		{"*", "mcp__fs__read", true},
		{"run_command", "run_command", true},
		{"run_command", "run_commands", false}, // a plain name matches exactly
		{"write_file|edit_file", "edit_file", true},
		{"write_file|edit_file", "read_file", false},
		{"mcp__.*", "mcp__github__create_issue", true},
		{"mcp__.*", "read_file", false},
		{"^edit", "edit_file", true},
		{"Bash", "run_command", true}, // Claude Code's name of it
		{"Edit|Write", "write_file", true},
		{"Edit|Write", "run_command", false},
		{"Bash.*", "run_command", false}, // a regular expression is matched as written
	} {
		if got := Matches(tc.matcher, tc.tool); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v; want %v", tc.matcher, tc.tool, got, tc.want)
		}
	}
}

func TestDecodeChecks(t *testing.T) {
	for _, tc := range []struct {
		raw, wantErr string
	}{
		{`{"PreToolUse": [{"matcher": "run_command", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}]}`, ""},
		{`{"Stop": [{"hooks": [{"type": "command", "command": "x", "description": "a plugin's field"}]}]}`, ""},
		{`{"Notification": [{"hooks": [{"type": "command", "command": "x"}]}]}`, "unknown event"},
		{`{"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}`, "matcher"},
		{`{"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}`, `type must be "command"`},
		{`{"PreToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}`, "empty command"},
		{`{"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}`, "negative"},
		{`[1]`, "must be an object"},
	} {
		_, err := Decode([]byte(tc.raw))
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Decode(%s) = %v; want error containing %q", tc.raw, err, tc.wantErr)
		}
	}
}

func TestDecision(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ev             Event
		code           int
		stdout, stderr string
		block          bool
		reason         string
	}{
		{"exit 0", PreToolUse, 0, "", "", false, ""},
		{"exit 2", PreToolUse, 2, "", "no rm\n", true, "no rm"},
		{"exit 1 is ignored", PreToolUse, 1, "", "oops", false, ""},
		{"json block", PostToolUse, 0, `{"decision": "block", "reason": "lint failed"}`, "", true, "lint failed"},
		{"json deny", PreToolUse, 0, `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not here"}}`, "", true, "not here"},
		{"json allow", PreToolUse, 0, `{"hookSpecificOutput": {"permissionDecision": "allow"}}`, "", false, ""},
		{"plain stdout", PreToolUse, 0, "checked", "", false, ""},
		{"exit 2 from a redirection dash could not open", PreToolUse, 2, "", "sh: 1: cannot create /home/u/.claude/log.txt: Permission denied\n", false, ""},
		{"exit 2 from a script's failed redirection", PreToolUse, 2, "", "/home/u/hooks/log.sh: 3: cannot create /x: Directory nonexistent\n", false, ""},
		{"exit 2 from a line that does not parse", PreToolUse, 2, "", "sh: 1: Syntax error: \"(\" unexpected\n", false, ""},
		{"exit 2 chosen after a shell error", PreToolUse, 2, "", "sh: 1: cannot create /x: Permission denied\nblocked: no writes to /etc\n", true, "sh: 1: cannot create /x: Permission denied\nblocked: no writes to /etc"},
		{"exit 2 with a reason that has a colon", PreToolUse, 2, "", "Blocked: 2 files: too many\n", true, "Blocked: 2 files: too many"},
	} {
		reason, block := decision(tc.ev, tc.code, tc.stdout, tc.stderr)
		if block != tc.block || reason != tc.reason {
			t.Errorf("%s: decision = %q, %v; want %q, %v", tc.name, reason, block, tc.reason, tc.block)
		}
	}
}

func TestRunnerReportsEveryRunAndJoinsContext(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{Dir: dir, Config: Config{
		UserPromptSubmit: {{Hooks: []Command{
			{Type: "command", Command: `echo "branch: main"`},
			{Type: "command", Command: `echo broken >&2; exit 3`},
			{Type: "command", Command: `grep -q '"prompt":"deploy' && { echo "no deploys" >&2; exit 2; }; exit 0`},
		}}},
	}}
	out := r.Run(context.Background(), Input{HookEventName: UserPromptSubmit, Prompt: "deploy it"}, "")
	if len(out.Runs) != 3 {
		t.Fatalf("%d runs; want 3", len(out.Runs))
	}
	if !out.Blocked || out.Reason != "no deploys" {
		t.Errorf("blocked %v, reason %q; want the third hook's refusal", out.Blocked, out.Reason)
	}
	if out.Context != "branch: main" {
		t.Errorf("context %q; want the first hook's stdout", out.Context)
	}
	if got := out.Runs[1]; got.ExitCode != 3 || !strings.Contains(got.Error, "ignored") || !strings.Contains(got.Error, "broken") {
		t.Errorf("run 2 = %+v; want exit 3 reported as ignored with its stderr", got)
	}
}

// TestScriptOfTheUsersFolderSeesTheCall: the documented pattern, a script
// outside the workspace named by the hook, reads the call on stdin and
// the project folder from the environment.
func TestScriptOfTheUsersFolderSeesTheCall(t *testing.T) {
	// Not under /tmp: commands and hooks get a private /tmp.
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := os.MkdirTemp(home, ".agentls-hook-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scripts) })
	dir := t.TempDir()
	script := scripts + "/no-rm.sh"
	if err := os.WriteFile(script, []byte("#!/bin/sh\nin=$(cat)\ncase \"$in\" in *'\"tool_name\":\"run_command\"'*'rm -rf'*) echo \"no rm in $CLAUDE_PROJECT_DIR\" >&2; exit 2;; esac\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Dir: dir, Config: Config{PreToolUse: {{Matcher: "run_command", Hooks: []Command{{Type: "command", Command: script}}}}}}
	out := r.Run(context.Background(), Input{HookEventName: PreToolUse, ToolName: "run_command", ToolInput: []byte(`{"command":"rm -rf /"}`)}, "run_command")
	if !out.Blocked || out.Reason != "no rm in "+dir {
		t.Errorf("outcome %+v; want blocked with the project folder in the reason", out)
	}
	out = r.Run(context.Background(), Input{HookEventName: PreToolUse, ToolName: "read_file", ToolInput: []byte(`{"path":"a"}`)}, "read_file")
	if len(out.Runs) != 0 {
		t.Errorf("runs %+v; want none (the matcher names run_command)", out.Runs)
	}
}

// userHome is a home folder for a hook: outside the workspace, the caches
// and /tmp (which the sandbox replaces), where the sandbox lets no command
// write.
func userHome(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(home, ".agentls-hook-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestClaudeCodeLoggingHookRunsUnchanged: the logging hook of Claude
// Code's documentation, verbatim, with Claude Code's matcher, run as the
// user's program: the command line is appended to a file of the home
// folder (outside the workspace) and the call goes on.
func TestClaudeCodeLoggingHookRunsUnchanged(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq IS NOT INSTALLED: Claude Code's logging hook cannot run; install it (scripts/setup does: apt-get install jq)")
	}
	home := userHome(t)
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	raw := `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "jq -r '.tool_input.command' >> ~/.claude/bash-command-log.txt"}]}]}`
	cfg, err := Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "OPENAI_API_KEY=sk-never-seen-1234"}
	for _, user := range []bool{false, true} {
		r := &Runner{Dir: t.TempDir(), Config: cfg, Env: env, UserProgram: user}
		out := r.Run(context.Background(), Input{HookEventName: PreToolUse, ToolName: "run_command",
			ToolInput: []byte(`{"command":"go test ./..."}`)}, "run_command")
		if len(out.Runs) != 1 {
			t.Fatalf("user=%v: %d runs; want the hook to run for run_command", user, len(out.Runs))
		}
		if out.Blocked {
			t.Errorf("user=%v: the logging hook blocked the call: %+v", user, out.Runs[0])
		}
		if !user {
			// Sandboxed, the redirection fails and dash exits 2: a failed
			// hook, said so, never a block.
			if got := out.Runs[0]; got.ExitCode != 2 || !strings.Contains(got.Error, "from the shell") || !strings.Contains(got.Stderr, "cannot create") {
				t.Errorf("sandboxed run = %+v; want exit 2 reported as the shell's, with its stderr", got)
			}
			continue
		}
		if got := out.Runs[0]; got.ExitCode != 0 || got.Error != "" {
			t.Errorf("run = %+v; want exit 0", got)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".claude", "bash-command-log.txt"))
	if err != nil || string(b) != "go test ./...\n" {
		t.Errorf("log = %q, %v; want the command line once", b, err)
	}
}

// TestHookThatChoosesToBlock: a user's hook that exits 2 on purpose
// blocks with its whole reason, the end of a long stderr kept.
func TestHookThatChoosesToBlock(t *testing.T) {
	cmd := `for i in $(seq 1 400); do echo "progress line $i" >&2; done; echo "Blocked: rm -rf is not allowed here" >&2; exit 2`
	r := &Runner{Dir: t.TempDir(), UserProgram: true, Config: Config{PreToolUse: {{Matcher: "Bash", Hooks: []Command{{Type: "command", Command: cmd}}}}}}
	out := r.Run(context.Background(), Input{HookEventName: PreToolUse, ToolName: "run_command", ToolInput: []byte(`{"command":"rm -rf /"}`)}, "run_command")
	if !out.Blocked || !strings.HasSuffix(out.Reason, "Blocked: rm -rf is not allowed here") {
		t.Fatalf("outcome %+v; want a block ending with the hook's reason", out)
	}
	if len(out.Reason) > StderrTail || !strings.Contains(out.Reason, "progress line 400") || strings.Contains(out.Reason, "progress line 1\n") {
		t.Errorf("reason of %d bytes; want the last %d bytes of stderr", len(out.Reason), StderrTail)
	}
	if out.Runs[0].Reason != out.Reason {
		t.Errorf("the run's reason %q; want the block's", out.Runs[0].Reason)
	}
}
