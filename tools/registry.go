package tools

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/tools/netproxy"
	"github.com/agentls/agentls/workspace"
)

// Env is what the tools act on and through. One Env (and one Registry) is
// made per task; Index and Commands are meant to be shared by all the tasks
// of a workspace.
type Env struct {
	Workspace *workspace.Workspace
	// Editor applies edits; nil means Workspace.DiskEditor().
	Editor workspace.Editor
	// Approver is asked before every run_command and before writes to files
	// not open in the editor; nil allows everything without asking. The
	// agent's session gives its approval policy (which remembers "allow
	// for this task").
	Approver Approver
	// Index is the grep filter of the workspace, shared by all its tasks:
	// its background build outlives each task. nil means the Registry
	// makes its own and closes it at Close.
	Index *grep.Index
	// Commands tracks running commands; the server calls KillAll at exit.
	// nil means the Registry makes its own (killed by Close).
	Commands *Commands
	// CommandTimeout is run_command's default timeout (120 s when 0);
	// MaxCommandTimeout caps the timeout a call may ask for (10 min when 0).
	CommandTimeout, MaxCommandTimeout time.Duration
	// SecretEnv names extra environment variables never passed to commands
	// (e.g. the configured API key variable). OPENAI_API_KEY and AGENTLS_*
	// are always dropped.
	SecretEnv []string
	// Shown is a text as agentls shows it to the user (the redactor every
	// face passes text through); run_command refuses a command it would
	// change. nil: text is shown as it is.
	Shown func(string) string
	// Environ is the base environment of commands; nil means os.Environ().
	Environ []string
	// Shell runs run_command's "command" form; "" means /bin/sh.
	Shell string
	// Sandbox is the sandbox setting of commands: "workspace-write" (the
	// default, "") or "off"; see package sandbox. Network allows commands
	// TCP connections (off by default where Landlock can forbid them).
	Sandbox string
	Network bool
	// Proxy, when Network is false, gives commands the network of an
	// allowlist through agentls's proxy (SandboxOptions.Proxy); nil: none.
	Proxy *netproxy.Proxy
	// OneShot is a process that runs one tool and exits (agentls tool):
	// grep starts no background filter build, whose work would compete
	// with the one search the process makes and be thrown away, and
	// list_files trusts the index the process built a moment ago.
	OneShot bool
}

// Registry holds the tools of one Env in a fixed order (stable tool
// definitions keep the model's prompt cache warm).
type Registry struct {
	env    Env
	tools  []Tool
	byName map[string]Tool

	ownCommands bool
	ownIndex    bool
}

//go:embed *.md
var descFS embed.FS

func description(name string) string {
	b, err := descFS.ReadFile(name + ".md")
	if err != nil {
		panic("tools: no description file for " + name)
	}
	return strings.TrimSpace(string(b))
}

// New makes the registry of every tool, in this order: list_files, grep,
// read_file, edit_file, write_file, run_command, update_plan.
func New(env Env) *Registry {
	r := &Registry{env: env, byName: map[string]Tool{}}
	if r.env.Editor == nil && env.Workspace != nil {
		r.env.Editor = env.Workspace.DiskEditor()
	}
	if r.env.Index == nil {
		r.env.Index = grep.NewIndex(0)
		r.ownIndex = true
	}
	if r.env.Commands == nil {
		r.env.Commands = NewCommands()
		r.ownCommands = true
	}
	if r.env.CommandTimeout <= 0 {
		r.env.CommandTimeout = 120 * time.Second
	}
	if r.env.MaxCommandTimeout <= 0 {
		r.env.MaxCommandTimeout = 10 * time.Minute
	}
	if r.env.CommandTimeout > r.env.MaxCommandTimeout {
		r.env.CommandTimeout = r.env.MaxCommandTimeout
	}
	if r.env.Shell == "" {
		r.env.Shell = "/bin/sh"
	}
	for _, t := range []Tool{
		newListFiles(r),
		newGrep(r),
		newReadFile(r),
		newEditFile(r),
		newWriteFile(r),
		newRunCommand(r),
		newUpdatePlan(r),
	} {
		r.tools = append(r.tools, t)
		r.byName[t.Name()] = t
	}
	return r
}

// Tools lists every tool in the fixed order.
func (r *Registry) Tools() []Tool { return append([]Tool(nil), r.tools...) }

// ReadOnly lists the tools that change nothing (offered to ask tasks):
// list_files, grep, read_file, update_plan.
func (r *Registry) ReadOnly() []Tool {
	var out []Tool
	for _, t := range r.tools {
		if t.ReadOnly() {
			out = append(out, t)
		}
	}
	return out
}

// Get returns the tool called name, or nil.
func (r *Registry) Get(name string) Tool { return r.byName[name] }

// Names lists the tool names in order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Name()
	}
	return out
}

// Run runs one tool call. The Result always carries the tool name, the
// arguments and the duration. An unknown tool name is an error Result that
// lists the valid names; a panic in a tool is an error Result and a Go error.
func (r *Registry) Run(ctx context.Context, name string, args json.RawMessage) (res Result, err error) {
	start := time.Now()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	defer func() {
		if p := recover(); p != nil {
			res = Result{IsError: true, Text: fmt.Sprintf("internal error in %s: %v; this is a bug in agentls, not in your call", name, p)}
			err = fmt.Errorf("tool %s panicked: %v\n%s", name, p, debug.Stack())
		}
		res.Tool, res.Args, res.Duration = name, args, time.Since(start)
	}()
	t := r.Get(name)
	if t == nil {
		return errorf("unknown tool %q; valid tools: %s", name, strings.Join(r.Names(), ", ")), nil
	}
	return t.Run(ctx, args)
}

// Close closes the grep index and kills the commands this registry runs,
// each only when the registry made it (a shared index keeps building).
func (r *Registry) Close() error {
	if r.ownIndex {
		_ = r.env.Index.Close()
	}
	if r.ownCommands {
		r.env.Commands.KillAll()
	}
	return nil
}

// tool is a Tool whose arguments decode into A.
type tool[A any] struct {
	name    string
	effects Effect
	schema  json.RawMessage
	desc    string
	run     func(ctx context.Context, a *A) (Result, error)
	// present describes a call (Presenter); nil: the generic description.
	present func(args json.RawMessage, res *Result) Presentation
}

// Define makes a Tool outside this package (the language-server tools)
// the way the built-in tools are made: its schema derived from A, its
// arguments decoded strictly (a bad argument is a Result the model can
// correct), desc as its description.
func Define[A any](name string, effects Effect, desc string, run func(ctx context.Context, a *A) (Result, error)) Tool {
	var zero A
	return &tool[A]{name: name, effects: effects, schema: schemaOf(&zero), desc: desc, run: run}
}

func newTool[A any](name string, effects Effect, run func(ctx context.Context, a *A) (Result, error)) *tool[A] {
	var zero A
	return &tool[A]{name: name, effects: effects, schema: schemaOf(&zero), desc: description(name), run: run, present: builtinPresent[name]}
}

func (t *tool[A]) Name() string            { return t.name }
func (t *tool[A]) Description() string     { return t.desc }
func (t *tool[A]) Schema() json.RawMessage { return t.schema }
func (t *tool[A]) ReadOnly() bool          { return t.effects == 0 }
func (t *tool[A]) Effects() Effect         { return t.effects }

// Present implements Tool.
func (t *tool[A]) Present(args json.RawMessage, res *Result) Presentation {
	if t.present == nil {
		return Presentation{}
	}
	return t.present(args, res)
}

// Run decodes args strictly and runs the tool. Argument problems are error
// Results the model can correct.
func (t *tool[A]) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	start := time.Now()
	var a A
	var res Result
	var err error
	if derr := decodeArgs(t.name, args, &a); derr != nil {
		var ae *ArgError
		if !errors.As(derr, &ae) {
			return Result{}, derr
		}
		res = errorf("%s", ae.Msg)
	} else {
		res, err = t.run(ctx, &a)
	}
	res.Tool, res.Args, res.Duration = t.name, args, time.Since(start)
	if len(res.Args) == 0 {
		res.Args = json.RawMessage("{}")
	}
	// The call as the tool describes it now that it ended, over what the
	// run itself set (a diff).
	p := Describe(t, t.name, res.Args, &res)
	if res.Present != nil {
		p = res.Present.Over(p)
	}
	res.Present = &p
	return res, err
}

// errorf is an error Result with a message for the model.
func errorf(format string, a ...any) Result {
	return Result{IsError: true, Text: fmt.Sprintf(format, a...)}
}

// resolve applies the workspace path rule and turns its errors into
// messages the model can act on.
func (r *Registry) resolve(input string) (workspace.Path, *Result) {
	p, err := r.env.Workspace.Resolve(input)
	if err != nil {
		res := errorf("%v; give a path inside the workspace (%s), relative to its root", err, strings.Join(r.env.Workspace.Roots(), ", "))
		if errors.Is(err, workspace.ErrInvalidPath) {
			res = errorf("%v; give a workspace-relative path such as \"src/main.go\"", err)
		}
		return workspace.Path{}, &res
	}
	return p, nil
}

// approve asks the Approver, when there is one. A denial is an error
// Result telling the model to go on without it.
func (r *Registry) approve(ctx context.Context, req ApprovalRequest) (*Result, error) {
	return Approve(ctx, r.env.Approver, req)
}

// Approve asks ap (nil: allowed) for req, filling the call's identity from
// ctx. It returns nil when the tool may go on, else the Result to return
// (denied, or the user could not be asked); a Go error only when ctx ended.
// Tools defined outside this package (Define) ask through it too.
func Approve(ctx context.Context, ap Approver, req ApprovalRequest) (*Result, error) {
	c, hasCall := CallFrom(ctx)
	if ap == nil {
		if req.Secret && hasCall {
			c.Consent.Allow(req.Path)
		}
		return nil, nil
	}
	if hasCall && req.CallID == "" {
		req.CallID, req.Args = c.ID, c.Args
	}
	d, err := ap.Approve(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res := errorf("could not ask the user to approve %s: %v; it was not done", req.Summary, err)
		return &res, nil
	}
	if !d.Allows() {
		res := errorf("the user denied: %s. It was not done; continue without it (do not ask for the same thing again), or explain in your answer what is needed", req.Summary)
		return &res, nil
	}
	if req.Secret && hasCall {
		c.Consent.Allow(req.Path)
	}
	return nil, nil
}

// inStateDir reports whether p is in agentls's state folder (.agentls in
// the primary root), which tools never write.
func (r *Registry) inStateDir(p workspace.Path) bool {
	roots := r.env.Workspace.Roots()
	rel := p.Rel()
	return len(roots) > 0 && p.Root() == roots[0] &&
		(rel == workspace.StateDirName || strings.HasPrefix(rel, workspace.StateDirName+"/"))
}
