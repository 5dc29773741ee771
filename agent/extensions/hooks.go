package extensions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/hooks"
	"github.com/agentls/agentls/workspace"
)

// Hooks are the user's programs around the agent's work (tools/hooks,
// Claude Code's convention). They come from the "hooks" setting only: a
// change of it after start-up (a workspace's editor settings can make one)
// adds a hook only with the user's consent (the host's settings consent),
// and no file of the workspace (.claude/settings.json,
// .agentls/settings.json) is read for hooks. Tool hooks attach to every
// tool of the task, whatever its source (built-in, MCP, language server),
// through WrapTool.

// HookOptions are what the hooks of one task need.
type HookOptions struct {
	// Config is the "hooks" setting the task runs with (the user's, or
	// consented to).
	Config hooks.Config
	// Dir is where the hooks run: the workspace's primary root.
	Dir string
	// SecretEnv are the variables hooks never see (the API key's).
	SecretEnv []string
	// Commands track the hooks' processes, killed when the host closes.
	Commands *tools.Commands
	// SessionOf is the session ID of a task of the host; "" when unknown.
	SessionOf func(taskID string) string
	// Redact hides the secrets of the current settings in what the hooks
	// add to the model's text.
	Redact func(string) string
	// Started is set once the host's SessionStart hooks ran (at its first
	// task); shared by every task of the host. nil: a flag of this task's
	// own.
	Started *atomic.Bool
}

// Hooks are the user's hooks of one task and the log of their runs, for
// its report; a hook that blocked or failed is also shown in the task's
// progress (Bind).
type Hooks struct {
	r   *hooks.Runner // nil when the settings have no hook
	o   HookOptions
	log hookLog
}

// NewHooks returns the hooks of one task. Every hook is the user's own
// program (the "hooks" setting is the user's; no hook is read from a
// repository), so it runs as one: without the filesystem sandbox, with the
// user's environment minus agentls's secrets, as Claude Code runs it.
func NewHooks(o HookOptions) *Hooks {
	if o.SessionOf == nil {
		o.SessionOf = func(string) string { return "" }
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.Started == nil {
		o.Started = new(atomic.Bool)
	}
	h := &Hooks{o: o}
	if len(o.Config) > 0 {
		h.r = &hooks.Runner{
			Config:      o.Config,
			Dir:         o.Dir,
			UserProgram: true,
			SecretEnv:   o.SecretEnv,
			Commands:    o.Commands,
		}
	}
	return h
}

// Bind shows the problems of the hooks through g, those so far and the
// later ones, redacted by redact.
func (h *Hooks) Bind(g *agent.Guard, redact func(string) string) { h.log.bind(g, redact) }

// Section is the report's list of hook runs; "" when none ran.
func (h *Hooks) Section() string { return h.log.section() }

// hookLog is every hook run of one task.
type hookLog struct {
	mu      sync.Mutex // guards the fields below
	runs    []hooks.Run
	guard   *agent.Guard
	redact  func(string) string
	pending []string // problems raised before bind
}

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

// runsSoFar are the hook runs so far.
func (l *hookLog) runsSoFar() []hooks.Run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hooks.Run(nil), l.runs...)
}

func (l *hookLog) section() string {
	runs := l.runsSoFar()
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
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s |\n", r.Event, render.Cell(r.Tool), render.Cell(r.Command), r.ExitCode,
			r.Duration.Round(1e6), render.Cell(outcome))
	}
	// What a hook that blocked or failed said, whole (its stderr's end).
	for _, r := range runs {
		if p := hookProblem(r); p != "" {
			b.WriteString("\n" + fence(p))
		}
	}
	return b.String()
}

// ToolEnv is what a tool's hooks need of the task.
type ToolEnv struct {
	Workspace *workspace.Workspace
	Guard     *agent.Guard
	// Sync writes the task's buffers to disk before a PostToolUse hook
	// runs; it returns a note for the model ("" when none).
	Sync func(ctx context.Context) string
	// Changes makes what a program changed part of the task's changes
	// (its undo, its report); it returns a line for the model naming
	// them, "" when nothing changed.
	Changes func(deltas []workspace.FileDelta) string
}

// WrapTool returns tool with the PreToolUse and PostToolUse hooks around
// it; tool itself when there is none. A PreToolUse hook that blocks
// answers the call with its reason (the tool does not run); a PostToolUse
// hook runs with the task's buffers on disk, and what it changes (a
// formatter) joins the task's changes and undo as a command's changes do;
// its block adds its reason to the result. Wrap outermost: a blocked call
// then does nothing at all.
func (h *Hooks) WrapTool(tool tools.Tool, env ToolEnv) tools.Tool {
	if !h.r.Has(hooks.PreToolUse) && !h.r.Has(hooks.PostToolUse) {
		return tool
	}
	return hookTool{Tool: tool, h: h, env: env}
}

type hookTool struct {
	tools.Tool
	h   *Hooks
	env ToolEnv
}

func (t hookTool) input(ev hooks.Event, ctx context.Context, args json.RawMessage) hooks.Input {
	in := hooks.Input{HookEventName: ev, TaskID: t.env.Guard.TaskID(), ToolName: t.Name(), ToolInput: args}
	if c, ok := tools.CallFrom(ctx); ok {
		in.ToolUseID = c.ID
	}
	in.SessionID = t.h.o.SessionOf(in.TaskID)
	if !json.Valid(in.ToolInput) {
		// A garbage argument still reaches the hook, as a string.
		in.ToolInput, _ = json.Marshal(string(args))
	}
	return in
}

func (t hookTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	r := t.h.r
	if r.Has(hooks.PreToolUse) {
		out := r.Run(ctx, t.input(hooks.PreToolUse, ctx, args), t.Name())
		t.h.log.add(out.Runs)
		if out.Blocked {
			return tools.Result{IsError: true, Text: "A PreToolUse hook blocked this call; it did not run. The hook said:\n" + out.Reason}, nil
		}
	}
	res, err := t.Tool.Run(ctx, args)
	if err != nil || res.IsError || !r.Has(hooks.PostToolUse) || ctx.Err() != nil {
		return res, err
	}
	in := t.input(hooks.PostToolUse, ctx, args)
	in.ToolResponse = &hooks.ToolResponse{Text: res.Text, IsError: res.IsError, Files: res.Changed}
	note := t.env.Sync(ctx)
	run := t.env.Workspace.StartCommand(ctx, t.env.Guard.TaskID())
	out := r.Run(ctx, in, t.Name())
	deltas, _ := run.End(context.WithoutCancel(ctx))
	t.h.log.add(out.Runs)
	if changed := t.env.Changes(deltas); changed != "" {
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

// Stop is the loop's Stop seam (agent.Config.StopHook); nil when no Stop
// hook is set. The Stop hooks run when the agent would end the task with
// answer; a hook that blocks sends it back once, with the hook's reason
// (active is true once it was sent back, and the hooks' answer is then
// only reported).
func (h *Hooks) Stop() func(ctx context.Context, taskID, answer string, active bool) string {
	r := h.r
	if !r.Has(hooks.Stop) {
		return nil
	}
	return func(ctx context.Context, taskID, answer string, active bool) string {
		in := hooks.Input{HookEventName: hooks.Stop, TaskID: taskID, StopHookActive: &active, LastAssistantMessage: answer}
		in.SessionID = h.o.SessionOf(taskID)
		out := r.Run(ctx, in, "")
		if active {
			for i := range out.Runs {
				if out.Runs[i].Blocked {
					out.Runs[i].Blocked = false
					out.Runs[i].Error = "block ignored: the agent was sent back once already"
				}
			}
		}
		h.log.add(out.Runs)
		if !out.Blocked || active {
			return ""
		}
		// Hooks see no secret variable, but may print a file's: what goes
		// to the model is redacted like any tool result.
		return "A Stop hook asked you to continue before you finish. It said:\n" + h.o.Redact(out.Reason)
	}
}

// HookBlockedError is the error of a prompt a UserPromptSubmit hook
// refused: no task was started.
type HookBlockedError struct{ Reason string }

func (e *HookBlockedError) Error() string {
	return "a UserPromptSubmit hook refused the prompt: " + e.Reason
}

// BeforeTask runs the SessionStart hooks (at the host's first task) and
// the UserPromptSubmit hooks before the task of spec starts. It returns
// the text their output adds to the prompt, or a *HookBlockedError.
func (h *Hooks) BeforeTask(ctx context.Context, spec agent.TaskSpec) (string, error) {
	r := h.r
	if r == nil {
		return "", nil
	}
	session := ""
	if spec.FollowUp != "" {
		session = h.o.SessionOf(spec.FollowUp)
	}
	var extra []string
	if r.Has(hooks.SessionStart) && h.o.Started.CompareAndSwap(false, true) {
		out := r.Run(ctx, hooks.Input{HookEventName: hooks.SessionStart, SessionID: session, Source: "startup"}, "startup")
		h.log.add(out.Runs)
		if out.Context != "" {
			extra = append(extra, out.Context)
		}
	}
	if r.Has(hooks.UserPromptSubmit) {
		out := r.Run(ctx, hooks.Input{HookEventName: hooks.UserPromptSubmit, SessionID: session, Prompt: spec.Prompt}, "")
		h.log.add(out.Runs)
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
	return "\n\nContext from the user's hooks:\n" + h.o.Redact(strings.Join(extra, "\n")), nil
}
