package extensions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/extensions"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/hooks"
)

func hook(ev hooks.Event, matcher, command string) hooks.Config {
	return hooks.Config{ev: {{Matcher: matcher, Hooks: []hooks.Command{{Type: "command", Command: command, Timeout: 10}}}}}
}

func newHooks(t *testing.T, cfg hooks.Config, started *atomic.Bool) *extensions.Hooks {
	t.Helper()
	cmds := tools.NewCommands()
	t.Cleanup(cmds.KillAll)
	return extensions.NewHooks(extensions.HookOptions{Config: cfg, Dir: t.TempDir(), Commands: cmds, Started: started,
		Redact: func(s string) string { return strings.ReplaceAll(s, "sk-secret", "[REDACTED]") }})
}

// ranTool is a tool that counts its runs.
type ranTool struct{ runs *atomic.Int32 }

func (ranTool) Name() string            { return "run_command" }
func (ranTool) Description() string     { return "runs a command" }
func (ranTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (ranTool) ReadOnly() bool          { return false }
func (ranTool) Effects() tools.Effect   { return tools.RunsProgram }
func (t ranTool) Run(context.Context, json.RawMessage) (tools.Result, error) {
	t.runs.Add(1)
	return tools.Result{Text: "ran"}, nil
}
func (ranTool) Present(json.RawMessage, *tools.Result) tools.Presentation {
	return tools.Presentation{}
}

// TestPreToolUseHookKeepsTheToolFromRunning: a PreToolUse hook that
// blocks (exit code 2) answers the call with its stderr and the tool does
// not run; one that matches another tool lets it run; settings without
// tool hooks leave the tool unwrapped.
func TestPreToolUseHookKeepsTheToolFromRunning(t *testing.T) {
	const blockRM = `input=$(cat); case "$input" in *'"command":"rm '*) echo "rm is blocked by policy" >&2; exit 2;; esac; exit 0`
	for _, tc := range []struct {
		name, matcher string
		wantRuns      int32
		wantText      string
	}{
		{"blocked", "run_command", 0, "A PreToolUse hook blocked this call; it did not run. The hook said:\nrm is blocked by policy"},
		{"other tool", "write_file", 1, "ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHooks(t, hook(hooks.PreToolUse, tc.matcher, blockRM), nil)
			runs := new(atomic.Int32)
			tool := h.WrapTool(ranTool{runs: runs}, extensions.ToolEnv{Guard: agent.NewGuard()})
			res, err := tool.Run(context.Background(), json.RawMessage(`{"command":"rm keep.txt"}`))
			if err != nil || res.Text != tc.wantText || runs.Load() != tc.wantRuns {
				t.Errorf("Run = %q, %v with %d runs of the tool; want %q with %d", res.Text, err, runs.Load(), tc.wantText, tc.wantRuns)
			}
		})
	}
	tool := ranTool{runs: new(atomic.Int32)}
	if got := newHooks(t, hook(hooks.Stop, "", "true"), nil).WrapTool(tool, extensions.ToolEnv{}); got != tools.Tool(tool) {
		t.Errorf("WrapTool without tool hooks = %T; want the tool itself", got)
	}
}

// TestUserPromptSubmitHookRefusesThePrompt: a UserPromptSubmit hook that
// blocks refuses the prompt with a *HookBlockedError carrying its reason;
// one that goes on adds its output to the prompt, redacted.
func TestUserPromptSubmitHookRefusesThePrompt(t *testing.T) {
	const policy = `grep -q password && { echo "no passwords in prompts" >&2; exit 2; }; echo "token sk-secret in use"; exit 0`
	h := newHooks(t, hook(hooks.UserPromptSubmit, "", policy), nil)
	_, err := h.BeforeTask(context.Background(), agent.TaskSpec{Prompt: "my password is hunter2"})
	var blocked *extensions.HookBlockedError
	if !errors.As(err, &blocked) || blocked.Reason != "no passwords in prompts" {
		t.Fatalf("BeforeTask = %v; want a *HookBlockedError with the hook's reason", err)
	}
	extra, err := h.BeforeTask(context.Background(), agent.TaskSpec{Prompt: "rename A to B"})
	if err != nil || extra != "\n\nContext from the user's hooks:\ntoken [REDACTED] in use" {
		t.Errorf("BeforeTask = %q, %v; want the hook's output, redacted", extra, err)
	}
	if sec := h.Section(); strings.Count(sec, "| UserPromptSubmit |") != 2 || !strings.Contains(sec, "| blocked |") {
		t.Errorf("Section = %q; want both runs, the first blocked", sec)
	}
}

// TestSessionStartHookRunsOncePerHost: the SessionStart hooks run at the
// first task of a host (the flag its tasks share), not at the next.
func TestSessionStartHookRunsOncePerHost(t *testing.T) {
	started := new(atomic.Bool)
	for i, want := range []string{"\n\nContext from the user's hooks:\nbranch: main", ""} {
		h := newHooks(t, hook(hooks.SessionStart, "startup", `echo "branch: main"`), started)
		if got, err := h.BeforeTask(context.Background(), agent.TaskSpec{Prompt: "what now?"}); err != nil || got != want {
			t.Errorf("task %d: BeforeTask = %q, %v; want %q", i+1, got, err, want)
		}
	}
}

// TestStopHookSendsTheAgentBackOnce: a Stop hook that blocks sends the
// agent back with its reason (redacted); once sent back, its block is
// ignored and reported as such. Without Stop hooks there is no seam.
func TestStopHookSendsTheAgentBackOnce(t *testing.T) {
	h := newHooks(t, hook(hooks.Stop, "", `echo "run the linter with sk-secret" >&2; exit 2`), nil)
	stop := h.Stop()
	if stop == nil {
		t.Fatal("Stop = nil with a Stop hook set")
	}
	ctx := context.Background()
	if got := stop(ctx, "t1", "done", false); got != "A Stop hook asked you to continue before you finish. It said:\nrun the linter with [REDACTED]" {
		t.Errorf("first stop = %q; want the agent sent back with the reason, redacted", got)
	}
	if got := stop(ctx, "t1", "done", true); got != "" {
		t.Errorf("second stop = %q; want none (sent back once already)", got)
	}
	if sec := h.Section(); strings.Count(sec, "| Stop |") != 2 || !strings.Contains(sec, "block ignored: the agent was sent back once already") {
		t.Errorf("Section = %q; want two Stop runs, the second's block ignored", sec)
	}
	if newHooks(t, hook(hooks.PreToolUse, "*", "true"), nil).Stop() != nil {
		t.Error("Stop without Stop hooks is not nil")
	}
}

// TestHookSectionKeepsTheTableWhole: a command holding a pipe, a backtick
// and a line break stays in its cell; a hook that fails is listed with
// what it said, fenced.
func TestHookSectionKeepsTheTableWhole(t *testing.T) {
	h := newHooks(t, hook(hooks.UserPromptSubmit, "", "echo `x` | cat >&2; exit 3"), nil)
	if _, err := h.BeforeTask(context.Background(), agent.TaskSpec{Prompt: "p"}); err != nil {
		t.Fatal(err)
	}
	sec := h.Section()
	var row string
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "| UserPromptSubmit |") {
			row = l
		}
	}
	if row == "" || strings.Count(row, " | ") != 5 || !strings.Contains(row, `echo 'x' \| cat`) {
		t.Errorf("row = %q; want six cells, the command's pipe escaped and backticks replaced:\n%s", row, sec)
	}
	if !strings.Contains(sec, "UserPromptSubmit hook failed") || !strings.Contains(sec, "```") {
		t.Errorf("Section = %q; want the failure fenced below the table", sec)
	}
}
