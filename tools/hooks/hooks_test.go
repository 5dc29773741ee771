package hooks

import (
	"context"
	"os"
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
		{"Bash", "run_command", false},
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
