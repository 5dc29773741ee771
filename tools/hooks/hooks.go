// Package hooks runs the user's hooks in Claude Code's convention, so hook
// scripts written for Claude Code work unchanged: a "hooks" setting maps
// an event (PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart)
// to matchers, each with commands; a command gets one JSON object on stdin
// (session_id, task_id, cwd, hook_event_name, tool_name, tool_input,
// tool_response, prompt, ...) and answers with its exit code: 0 goes on,
// 2 blocks (its stderr is the reason), anything else is reported and
// ignored. A JSON answer on stdout ({"decision": "block", "reason"} or
// PreToolUse's hookSpecificOutput.permissionDecision "deny") blocks too.
//
// Every hook runs through tools.Run, the launcher of every program, killed
// at its timeout; the user's own hooks (Runner.UserProgram) run as the
// user's programs, without the filesystem sandbox, as Claude Code runs
// them. Exit code 2 blocks only when the hook chose it: a 2 that the shell
// itself gave (its own error message, such as a redirection it could not
// open, is the last line of stderr) is a failed hook, reported, not a
// block. Which hooks exist is the caller's business (a user-level setting
// only); this package knows nothing of tasks, tools or settings trust.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/agentls/agentls/tools"
)

// Event is a point of the agent's work where hooks run.
type Event string

// The events, with Claude Code's names.
const (
	PreToolUse       Event = "PreToolUse"       // before a tool runs; exit 2 blocks the call
	PostToolUse      Event = "PostToolUse"      // after a tool ran; exit 2 sends its stderr to the model
	UserPromptSubmit Event = "UserPromptSubmit" // before a task starts; exit 2 refuses the prompt
	Stop             Event = "Stop"             // when the agent would stop; exit 2 sends it back once
	SessionStart     Event = "SessionStart"     // before the first task of a session
)

// Events are the events agentls runs hooks for, in the order they happen.
var Events = []Event{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop}

// DefaultTimeout is a hook's time limit when its entry gives none
// (Claude Code's default).
const DefaultTimeout = 60 * time.Second

// Command is one hook: {"type": "command", "command": "...", "timeout": s}.
type Command struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout,omitempty"` // seconds; 0: DefaultTimeout
}

// Matcher is one entry of an event: the hooks that run for the tools whose
// name matches.
type Matcher struct {
	// Matcher selects tools by name (PreToolUse, PostToolUse): "" or "*"
	// matches every tool, a plain name or names joined by | match exactly,
	// anything else is a regular expression (Go's RE2 syntax) that must
	// match somewhere in the name ("mcp__.*", "edit_.*|write_file").
	// Other events ignore it, except SessionStart, where it matches the
	// source ("startup").
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []Command `json:"hooks"`
}

// Config is the "hooks" setting: the matchers of each event.
type Config map[Event][]Matcher

// Check reports the first problem of c: an unknown event, a hook that is
// not a command, an empty command, a matcher that does not compile, a
// negative timeout.
func (c Config) Check() error {
	for ev, ms := range c {
		if !known(ev) {
			return fmt.Errorf("unknown event %q (agentls runs %s)", ev, eventNames())
		}
		for i, m := range ms {
			if _, err := compile(m.Matcher); err != nil {
				return fmt.Errorf("%s[%d]: matcher %q: %w", ev, i, m.Matcher, err)
			}
			if len(m.Hooks) == 0 {
				return fmt.Errorf("%s[%d]: no hooks", ev, i)
			}
			for j, h := range m.Hooks {
				if h.Type != "command" {
					return fmt.Errorf(`%s[%d].hooks[%d]: type must be "command", got %q`, ev, i, j, h.Type)
				}
				if strings.TrimSpace(h.Command) == "" {
					return fmt.Errorf("%s[%d].hooks[%d]: empty command", ev, i, j)
				}
				if h.Timeout < 0 {
					return fmt.Errorf("%s[%d].hooks[%d]: timeout must not be negative", ev, i, j)
				}
			}
		}
	}
	return nil
}

func known(ev Event) bool {
	for _, e := range Events {
		if e == ev {
			return true
		}
	}
	return false
}

func eventNames() string {
	names := make([]string, len(Events))
	for i, e := range Events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// Entry is one hook of a Config, flattened: what a listing shows and what
// consent is given for.
type Entry struct {
	Event   Event         `json:"event"`
	Matcher string        `json:"matcher,omitempty"`
	Command string        `json:"command"`
	Timeout time.Duration `json:"timeout"`
}

// Key identifies an entry: a change of its event, matcher or command is
// another hook.
func (e Entry) Key() string { return string(e.Event) + "\x00" + e.Matcher + "\x00" + e.Command }

// Entries are the hooks of c, events in the order of Events.
func (c Config) Entries() []Entry {
	var out []Entry
	for _, ev := range Events {
		for _, m := range c[ev] {
			for _, h := range m.Hooks {
				out = append(out, Entry{Event: ev, Matcher: m.Matcher, Command: h.Command, Timeout: timeoutOf(h)})
			}
		}
	}
	return out
}

// Only is c with only the entries keep accepts.
func (c Config) Only(keep func(Entry) bool) Config {
	out := Config{}
	for ev, ms := range c {
		for _, m := range ms {
			var hs []Command
			for _, h := range m.Hooks {
				if keep(Entry{Event: ev, Matcher: m.Matcher, Command: h.Command, Timeout: timeoutOf(h)}) {
					hs = append(hs, h)
				}
			}
			if len(hs) > 0 {
				out[ev] = append(out[ev], Matcher{Matcher: m.Matcher, Hooks: hs})
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func timeoutOf(h Command) time.Duration {
	if h.Timeout <= 0 {
		return DefaultTimeout
	}
	return time.Duration(h.Timeout * float64(time.Second))
}

// ClaudeCodeNames are Claude Code's names of the tools agentls has under
// its own names: a plain matcher naming one ("Bash", "Edit|Write") also
// matches agentls's tool, so a hook copied from Claude Code's settings
// runs unchanged. Their tool_input fields are agentls's (run_command's
// "command" is Bash's).
var ClaudeCodeNames = map[string]string{
	"Bash": "run_command", "Read": "read_file", "Write": "write_file", "Edit": "edit_file",
	"MultiEdit": "edit_file", "Grep": "grep", "Glob": "list_files", "TodoWrite": "update_plan",
}

// plainNames is a matcher of names joined by |, matched exactly.
var plainNames = lazyregexp.New(`^[A-Za-z0-9_\-|]+$`)

var (
	reMu    sync.Mutex
	reCache = map[string]*regexp.Regexp{}
)

// compile returns the matcher's regular expression; nil matches all.
func compile(m string) (*regexp.Regexp, error) {
	if m == "" || m == "*" {
		return nil, nil
	}
	reMu.Lock()
	defer reMu.Unlock()
	if re, ok := reCache[m]; ok {
		return re, nil
	}
	expr := m
	if plainNames.MatchString(m) {
		var parts []string
		for _, p := range strings.Split(m, "|") {
			parts = append(parts, regexp.QuoteMeta(p))
			if a, ok := ClaudeCodeNames[p]; ok {
				parts = append(parts, regexp.QuoteMeta(a))
			}
		}
		expr = "^(?:" + strings.Join(parts, "|") + ")$"
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	reCache[m] = re
	return re, nil
}

// Matches reports whether matcher m selects name.
func Matches(m, name string) bool {
	re, err := compile(m)
	if err != nil {
		return false
	}
	return re == nil || re.MatchString(name)
}

// Input is the JSON object a hook reads on stdin, with Claude Code's field
// names. Fields an event does not have are left out.
type Input struct {
	SessionID     string `json:"session_id"`
	TaskID        string `json:"task_id,omitempty"`
	Cwd           string `json:"cwd"`
	HookEventName Event  `json:"hook_event_name"`
	// TranscriptPath is the task's flight recording (JSON lines of model
	// exchanges), when it has one; not Claude Code's transcript format.
	TranscriptPath string          `json:"transcript_path,omitempty"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse   *ToolResponse   `json:"tool_response,omitempty"`
	Prompt         string          `json:"prompt,omitempty"`
	StopHookActive *bool           `json:"stop_hook_active,omitempty"`
	Source         string          `json:"source,omitempty"` // SessionStart: "startup"
	// LastAssistantMessage is the answer the agent would stop with (Stop).
	LastAssistantMessage string `json:"last_assistant_message,omitempty"`
}

// ToolResponse is a tool's result as PostToolUse hooks see it.
type ToolResponse struct {
	Text    string   `json:"text"`
	IsError bool     `json:"is_error"`
	Files   []string `json:"files,omitempty"` // workspace paths the tool changed
}

// maxInput bounds the JSON written to a hook's stdin: under a pipe's
// buffer, so writing it never waits on a hook that does not read it.
const maxInput = 60 << 10

// encode is in as JSON, the tool response's text cut (head and tail) to
// keep the whole under maxInput.
func encode(in Input) ([]byte, error) {
	b, err := json.Marshal(in)
	if err != nil || len(b) <= maxInput || in.ToolResponse == nil {
		return b, err
	}
	over := len(b) - maxInput + 200
	r := *in.ToolResponse
	if over < len(r.Text) {
		keep := (len(r.Text) - over) / 2
		r.Text = r.Text[:keep] + fmt.Sprintf("\n[... %d bytes cut ...]\n", over) + r.Text[len(r.Text)-keep:]
	} else {
		r.Text = ""
	}
	in.ToolResponse = &r
	return json.Marshal(in)
}

// Run is one hook that ran (or could not start).
type Run struct {
	Event    Event         `json:"event"`
	Matcher  string        `json:"matcher,omitempty"`
	Command  string        `json:"command"`
	Tool     string        `json:"tool,omitempty"`
	ExitCode int           `json:"exitCode"` // -1: killed or not started
	Duration time.Duration `json:"duration"`
	TimedOut bool          `json:"timedOut,omitempty"`
	Blocked  bool          `json:"blocked,omitempty"`
	// Error says why the hook did not start, or how it failed (a timeout,
	// an exit code other than 0 and 2, a 2 the shell gave).
	Error string `json:"error,omitempty"`
	// Reason is what a hook that blocked said.
	Reason string `json:"reason,omitempty"`
	// Stderr is the end of what the hook wrote to stderr (at most
	// StderrTail bytes), kept when it blocked or failed.
	Stderr string `json:"stderr,omitempty"`
}

// StderrTail bounds what is kept of a hook's stderr: its end, where a
// program says why it failed.
const StderrTail = 2 << 10

// Outcome is what the hooks of one event decided.
type Outcome struct {
	Runs []Run
	// Blocked: a hook exited 2 (or answered "block"); Reason is what it
	// said (stderr, or its JSON reason).
	Blocked bool
	Reason  string
	// Context is the stdout of the hooks that exited 0, for the events
	// whose output joins the model's context (UserPromptSubmit,
	// SessionStart).
	Context string
}

// Runner runs the hooks of a Config.
type Runner struct {
	Config Config
	// Dir is where hooks run (the workspace root), given to them as cwd
	// and as CLAUDE_PROJECT_DIR and AGENTLS_PROJECT_DIR.
	Dir string
	// Sandbox confines hooks as it confines commands; no Roots: Dir.
	// Ignored when UserProgram.
	Sandbox   tools.SandboxOptions
	SecretEnv []string        // variables dropped from the environment (the API key's)
	Env       []string        // the base environment; nil: this process's
	Commands  *tools.Commands // tracks hook processes so KillAll reaches them; may be nil
	// UserProgram runs the hooks as the user's own programs (no filesystem
	// sandbox, the user's environment without agentls's secrets): set by
	// the caller for hooks from the user's settings, never for a hook a
	// repository names.
	UserProgram bool
}

// Has reports whether any hook is configured for ev.
func (r *Runner) Has(ev Event) bool { return r != nil && len(r.Config[ev]) > 0 }

// maxOutput bounds what is kept of a hook's stdout and stderr.
const maxOutput = 16 << 10

// Run runs the hooks of in.HookEventName whose matcher selects subject
// (the tool name; the source for SessionStart), one after another in the
// order configured. A hook that blocks does not stop the others (each is
// a separate check); their reasons are joined. ctx ends every hook.
func (r *Runner) Run(ctx context.Context, in Input, subject string) Outcome {
	var out Outcome
	if r == nil {
		return out
	}
	ev := in.HookEventName
	in.Cwd = r.Dir
	stdin, err := encode(in)
	if err != nil {
		out.Runs = append(out.Runs, Run{Event: ev, ExitCode: -1, Error: "encode hook input: " + err.Error()})
		return out
	}
	var reasons, extra []string
	for _, m := range r.Config[ev] {
		if usesMatcher(ev) && !Matches(m.Matcher, subject) {
			continue
		}
		for _, h := range m.Hooks {
			run, stdout, stderr := r.one(ctx, h, stdin)
			run.Event, run.Matcher, run.Tool = ev, m.Matcher, in.ToolName
			reason, block := decision(ev, run.ExitCode, stdout, stderr)
			switch {
			case block:
				run.Blocked, run.Reason = true, reason
				reasons = append(reasons, reason)
			case run.Error == "" && run.ExitCode == 2:
				run.Error = fmt.Sprintf("exit code 2 from the shell, not the hook's choice (ignored: not a block)%s", withText(lastLine(stderr)))
				run.Stderr = strings.TrimSpace(stderr)
			case run.ExitCode == 0 && (ev == UserPromptSubmit || ev == SessionStart):
				if s := strings.TrimSpace(stdout); s != "" && !isJSON(s) {
					extra = append(extra, s)
				}
			case run.Error == "" && run.ExitCode != 0:
				run.Error = fmt.Sprintf("exit code %d (ignored: only 2 blocks)%s", run.ExitCode, withText(lastLine(stderr)))
				run.Stderr = strings.TrimSpace(stderr)
			case run.Error != "":
				run.Stderr = strings.TrimSpace(stderr)
			}
			out.Runs = append(out.Runs, run)
		}
	}
	out.Blocked = len(reasons) > 0
	out.Reason = strings.Join(reasons, "\n")
	out.Context = strings.Join(extra, "\n")
	return out
}

// usesMatcher reports whether ev selects hooks by its matcher.
func usesMatcher(ev Event) bool { return ev == PreToolUse || ev == PostToolUse || ev == SessionStart }

func withText(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return ": " + s
}

func isJSON(s string) bool { return strings.HasPrefix(s, "{") && json.Valid([]byte(s)) }

// shellMessage matches the form in which a POSIX shell (dash, bash, ash)
// reports its own errors: its name or script, the line number, the
// message ("sh: 1: cannot create /x: Permission denied", "sh: line 1:
// /x: Permission denied").
var shellMessage = lazyregexp.New(`^[^\s:]+: (line )?[0-9]+: `)

// FromShell reports whether a hook's exit code 2 came from the shell
// itself rather than from the hook's choice: the last line of its stderr
// is the shell's own error message. dash, Debian's sh, exits 2 when a
// redirection cannot be opened or the line does not parse; a hook that
// blocks on purpose says why, and its last line is its reason.
func FromShell(stderr string) bool { return shellMessage.MatchString(lastLine(stderr)) }

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// decision reads a hook's answer: exit code 2 blocks with stderr as the
// reason, unless the shell gave it (FromShell); exit code 0 with a JSON object on stdout may block too
// ({"decision": "block", "reason"}, or PreToolUse's
// {"hookSpecificOutput": {"permissionDecision": "deny",
// "permissionDecisionReason"}}).
func decision(ev Event, code int, stdout, stderr string) (string, bool) {
	if code == 2 && !FromShell(stderr) {
		reason := strings.TrimSpace(stderr)
		if reason == "" {
			reason = fmt.Sprintf("a %s hook blocked this (exit code 2, no message)", ev)
		}
		return reason, true
	}
	if code != 0 || !isJSON(strings.TrimSpace(stdout)) {
		return "", false
	}
	var a struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
		Specific struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(stdout)), &a) != nil {
		return "", false
	}
	if a.Decision == "block" {
		if a.Reason == "" {
			a.Reason = fmt.Sprintf("a %s hook blocked this", ev)
		}
		return a.Reason, true
	}
	if ev == PreToolUse && a.Specific.PermissionDecision == "deny" {
		if a.Specific.PermissionDecisionReason == "" {
			a.Specific.PermissionDecisionReason = "a PreToolUse hook denied this call"
		}
		return a.Specific.PermissionDecisionReason, true
	}
	return "", false
}

// one runs hook h with stdin through the launcher.
func (r *Runner) one(ctx context.Context, h Command, stdin []byte) (Run, string, string) {
	run := Run{Command: h.Command, ExitCode: -1}
	var stdout bounded
	stderr := tools.Tail{Max: StderrTail}
	sb := r.Sandbox
	if len(sb.Roots) == 0 {
		sb.Roots = []string{r.Dir}
	}
	start := time.Now()
	res, err := tools.Run(ctx, tools.RunSpec{
		Argv:        []string{"sh", "-c", h.Command},
		Dir:         r.Dir,
		Env:         r.Env,
		SecretEnv:   r.SecretEnv,
		ExtraEnv:    []string{"CLAUDE_PROJECT_DIR=" + r.Dir, "AGENTLS_PROJECT_DIR=" + r.Dir},
		Input:       stdin,
		Stdout:      &stdout,
		Stderr:      &stderr,
		Timeout:     timeoutOf(h),
		Sandbox:     sb,
		Commands:    r.Commands,
		UserProgram: r.UserProgram,
	})
	run.Duration = time.Since(start)
	if err != nil {
		run.Error = "did not start: " + err.Error()
		return run, "", ""
	}
	run.ExitCode, run.TimedOut = res.ExitCode, res.TimedOut
	switch {
	case res.TimedOut:
		run.Error = fmt.Sprintf("killed at its timeout of %s (ignored)", timeoutOf(h))
		run.ExitCode = -1
	case res.Cancelled:
		run.Error = "cancelled with the task"
		run.ExitCode = -1
	case res.Signal != "":
		run.Error = "killed by " + res.Signal
	}
	return run, stdout.String(), stderr.String()
}

// bounded keeps the first maxOutput bytes written to it; safe for the two
// copying goroutines of tools.Run (each has its own).
type bounded struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *bounded) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxOutput - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *bounded) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Decode reads a "hooks" setting and checks it.
func Decode(raw []byte) (Config, error) {
	var c Config
	// Unknown fields are accepted: Claude Code's files carry some
	// (a plugin hook's "description").
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, errors.New(`must be an object of events to [{"matcher": string, "hooks": [{"type": "command", "command": string, "timeout"?: seconds}]}]`)
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c, nil
}

// String is one line: event, tool, command, exit code, duration, what
// happened.
func (r Run) String() string {
	var b strings.Builder
	b.WriteString(string(r.Event))
	if r.Tool != "" {
		b.WriteString(" (" + r.Tool + ")")
	}
	fmt.Fprintf(&b, " `%s`: exit %d in %s", r.Command, r.ExitCode, r.Duration.Round(time.Millisecond))
	if r.Blocked {
		b.WriteString(", blocked")
	}
	if r.Error != "" {
		b.WriteString(", " + r.Error)
	}
	return b.String()
}
