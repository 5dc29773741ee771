package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/hooks"
	"github.com/agentls/agentls/workspace"
)

// Hooks are the user's programs around the agent's work (tools/hooks,
// Claude Code's convention). They come from the "hooks" setting only: a
// change of it after start-up (a workspace's editor settings can make one)
// adds a hook only with the user's consent (confirmSettings), and no file
// of the workspace (.claude/settings.json, .agentls/settings.json) is read
// for hooks. Tool hooks attach to every tool of the task, whatever its
// source (built-in, MCP, language server), by wrapping it in toolSet.

// hookRunner is the runner of s's hooks for the workspace; nil when s has
// none. Every hook is the user's own program (the "hooks" setting is the
// user's; no hook is read from a repository), so it runs as one: without
// the filesystem sandbox, with the user's environment minus agentls's
// secrets, as Claude Code runs it.
func (h *Host) hookRunner(ws *workspace.Workspace, s Settings) *hooks.Runner {
	if len(s.Hooks) == 0 {
		return nil
	}
	return &hooks.Runner{
		Config:      s.Hooks,
		Dir:         ws.Roots()[0],
		UserProgram: true,
		SecretEnv:   []string{s.APIKeyEnv},
		Commands:    h.commands,
	}
}

// hookLog is every hook run of one task, for its report; a hook that
// blocked or failed is also shown in the task's progress (bind).
type hookLog struct {
	mu      sync.Mutex // guards the fields below
	runs    []hooks.Run
	guard   *agent.Guard
	redact  func(string) string
	pending []string // problems raised before bind
}

// bind shows the problems of the hooks through g, those so far and the
// later ones, redacted.
func (l *hookLog) bind(g *agent.Guard, redact func(string) string) {
	l.mu.Lock()
	l.guard, l.redact = g, redact
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, p := range pending {
		g.Problem(redact(p))
	}
}

func (l *hookLog) add(runs []hooks.Run) {
	if l == nil || len(runs) == 0 {
		return
	}
	l.mu.Lock()
	l.runs = append(l.runs, runs...)
	g, redact := l.guard, l.redact
	var shown []string
	for _, r := range runs {
		if p := hookProblem(r); p != "" {
			if g == nil {
				l.pending = append(l.pending, p)
			} else {
				shown = append(shown, p)
			}
		}
	}
	l.mu.Unlock()
	for _, p := range shown {
		g.Problem(redact(p))
	}
}

// hookProblem is what the user is shown of a hook that blocked or failed:
// which hook, and what it said (the end of its stderr); "" for one that
// went on.
func hookProblem(r hooks.Run) string {
	on := string(r.Event) + " hook"
	if r.Tool != "" {
		on += " on " + r.Tool
	}
	switch {
	case r.Blocked:
		return fmt.Sprintf("%s blocked (`%s`): %s", on, r.Command, r.Reason)
	case r.Error != "":
		msg := fmt.Sprintf("%s failed (`%s`): %s", on, r.Command, r.Error)
		if r.Stderr != "" && !strings.Contains(r.Error, r.Stderr) {
			msg += "\nits stderr ends with:\n" + r.Stderr
		}
		return msg
	}
	return ""
}

// Runs are the hook runs so far.
func (l *hookLog) Runs() []hooks.Run {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hooks.Run(nil), l.runs...)
}

// section is the report's list of hook runs; "" when none ran.
func (l *hookLog) section() string {
	runs := l.Runs()
	if len(runs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Hooks\n\n| Event | Tool | Command | Exit code | Duration | Outcome |\n|---|---|---|---|---|---|\n")
	for _, r := range runs {
		outcome := "continued"
		switch {
		case r.Blocked:
			outcome = "blocked"
		case r.Error != "":
			outcome = r.Error
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s |\n", r.Event, mdCell(r.Tool), mdCell(r.Command), r.ExitCode,
			r.Duration.Round(1e6), mdCell(outcome))
	}
	// What a hook that blocked or failed said, whole (its stderr's end).
	for _, r := range runs {
		if p := hookProblem(r); p != "" {
			b.WriteString("\n" + fence(p))
		}
	}
	return b.String()
}

// hookTool runs the PreToolUse and PostToolUse hooks around a tool. A
// PreToolUse hook that blocks answers the call with its reason (the tool
// does not run); a PostToolUse hook runs with the task's buffers on disk,
// and what it changes (a formatter) joins the task's changes and undo as
// a command's changes do; its block adds its reason to the result.
type hookTool struct {
	tools.Tool
	r     *hooks.Runner
	log   *hookLog
	ws    *workspace.Workspace
	guard *agent.Guard
	sync  func(ctx context.Context) string
	h     *Host
}

func (t hookTool) input(ev hooks.Event, ctx context.Context, args json.RawMessage) hooks.Input {
	in := hooks.Input{HookEventName: ev, TaskID: t.guard.TaskID(), ToolName: t.Name(), ToolInput: args}
	if c, ok := tools.CallFrom(ctx); ok {
		in.ToolUseID = c.ID
	}
	if at := t.h.tasks.Task(in.TaskID); at != nil {
		in.SessionID = at.SessionID()
	}
	if !json.Valid(in.ToolInput) {
		// A garbage argument still reaches the hook, as a string.
		in.ToolInput, _ = json.Marshal(string(args))
	}
	return in
}

func (t hookTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	if t.r.Has(hooks.PreToolUse) {
		out := t.r.Run(ctx, t.input(hooks.PreToolUse, ctx, args), t.Name())
		t.log.add(out.Runs)
		if out.Blocked {
			return tools.Result{IsError: true, Text: "A PreToolUse hook blocked this call; it did not run. The hook said:\n" + out.Reason}, nil
		}
	}
	res, err := t.Tool.Run(ctx, args)
	if err != nil || res.IsError || !t.r.Has(hooks.PostToolUse) || ctx.Err() != nil {
		return res, err
	}
	in := t.input(hooks.PostToolUse, ctx, args)
	in.ToolResponse = &hooks.ToolResponse{Text: res.Text, IsError: res.IsError, Files: res.Changed}
	note := t.sync(ctx)
	run := t.ws.StartCommand(ctx, t.guard.TaskID())
	out := t.r.Run(ctx, in, t.Name())
	deltas, _ := run.End(context.WithoutCancel(ctx))
	t.log.add(out.Runs)
	if changed := commandChanges(t.ws, t.guard, deltas); changed != "" {
		res.Text += "\n" + strings.Replace(changed, "files the command changed", "files the PostToolUse hook changed", 1)
		for _, d := range deltas {
			res.Changed = appendNew(res.Changed, d.Path.String())
		}
	}
	if note != "" {
		res.Text = note + "\n" + res.Text
	}
	if out.Blocked {
		res.Text += "\nA PostToolUse hook reported a problem with this call:\n" + out.Reason
	}
	return res, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// stopHook is the loop's Stop seam: the Stop hooks run when the agent
// would end the task with answer; a hook that blocks sends it back once,
// with the hook's reason (active is true once it was sent back, and the
// hooks' answer is then only reported).
func stopHook(h *Host, r *hooks.Runner, log *hookLog) func(ctx context.Context, taskID, answer string, active bool) string {
	if !r.Has(hooks.Stop) {
		return nil
	}
	return func(ctx context.Context, taskID, answer string, active bool) string {
		in := hooks.Input{HookEventName: hooks.Stop, TaskID: taskID, StopHookActive: &active, LastAssistantMessage: answer}
		if at := h.tasks.Task(taskID); at != nil {
			in.SessionID = at.SessionID()
		}
		out := r.Run(ctx, in, "")
		if active {
			for i := range out.Runs {
				if out.Runs[i].Blocked {
					out.Runs[i].Blocked = false
					out.Runs[i].Error = "block ignored: the agent was sent back once already"
				}
			}
		}
		log.add(out.Runs)
		if !out.Blocked || active {
			return ""
		}
		// Hooks see no secret variable, but may print a file's: what goes
		// to the model is redacted like any tool result.
		return "A Stop hook asked you to continue before you finish. It said:\n" + h.Redactor().String(out.Reason)
	}
}

// HookBlockedError is the error of a prompt a UserPromptSubmit hook
// refused: no task was started.
type HookBlockedError struct{ Reason string }

func (e *HookBlockedError) Error() string {
	return "a UserPromptSubmit hook refused the prompt: " + e.Reason
}

// promptHooks runs the SessionStart hooks (at the host's first task) and
// the UserPromptSubmit hooks before a task starts. It returns the text
// their output adds to the prompt, or a *HookBlockedError.
func (h *Host) promptHooks(ctx context.Context, r *hooks.Runner, log *hookLog, spec agent.TaskSpec) (string, error) {
	if r == nil {
		return "", nil
	}
	session := ""
	if spec.FollowUp != "" {
		if at := h.tasks.Task(spec.FollowUp); at != nil {
			session = at.SessionID()
		}
	}
	var extra []string
	if r.Has(hooks.SessionStart) && h.sessionStarted.CompareAndSwap(false, true) {
		out := r.Run(ctx, hooks.Input{HookEventName: hooks.SessionStart, SessionID: session, Source: "startup"}, "startup")
		log.add(out.Runs)
		if out.Context != "" {
			extra = append(extra, out.Context)
		}
	}
	if r.Has(hooks.UserPromptSubmit) {
		out := r.Run(ctx, hooks.Input{HookEventName: hooks.UserPromptSubmit, SessionID: session, Prompt: spec.Prompt}, "")
		log.add(out.Runs)
		if out.Blocked {
			return "", &HookBlockedError{Reason: out.Reason}
		}
		if out.Context != "" {
			extra = append(extra, out.Context)
		}
	}
	if len(extra) == 0 {
		return "", nil
	}
	return "\n\nContext from the user's hooks:\n" + h.Redactor().String(strings.Join(extra, "\n")), nil
}
