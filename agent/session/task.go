package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/extensions"
	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/workspace"
)

// Task is a task the host started: the agent's task, the port it reports
// to, and, once it has ended, its outcome.
type Task struct {
	*agent.Task
	h       *Host
	done    chan struct{} // closed once the outcome is set
	out     *Outcome
	git     *taskGit                // the workspace's git state before and after the task
	diags   *diagnostics            // the editor's errors before and after the task's edits; nil without them
	check   *checkBaseline          // the check command before the first edit and after; nil without one
	hooks   *extensions.Hooks       // the user's hooks of the task and their runs
	mcp     *extensions.TaskServers // the MCP servers whose tools the task gets, and what failed of them; nil: none
	edits   editLog                 // what edit tools said about their edits, for the report (renames)
	bufs    bufferLog               // the user's unsaved buffers its commands met, for the report
	reviews reviewLog               // what the user rejected in review, for the report

	deniedMu sync.Mutex // guards denied
	denied   []string   // what the task was refused (approval summaries: "run `go vet ./...`")
}

// noteDenied records a refused action, for the summary.
func (t *Task) noteDenied(what string) {
	t.deniedMu.Lock()
	defer t.deniedMu.Unlock()
	t.denied = append(t.denied, what)
}

// deniedNote is " (denied: run `go vet ./...`)", or "" when nothing was
// refused: a task that ends "completed" after a denial says so.
func (t *Task) deniedNote() string {
	t.deniedMu.Lock()
	defer t.deniedMu.Unlock()
	if len(t.denied) == 0 {
		return ""
	}
	return " (denied: " + strings.Join(t.denied, "; ") + ")"
}

// Outcome is how a task ended, after the host wrote its report.
type Outcome struct {
	Result  *agent.Result
	Report  string // absolute path of the markdown report; "" when not written
	Summary string // one line: what the task did and what it cost
	// Cost is what the task's tokens cost in US dollars, when the settings
	// give the model's price (CostKnown).
	Cost      float64
	CostKnown bool
	// Diagnostics are the errors the task introduced and fixed, as the
	// editor's language servers report them; nil when the editor shares
	// none.
	Diagnostics *DiagnosticsDelta
	// Git is the git state of the workspace (its first root) before and
	// after the task, and the files it edited that the user had modified.
	Git *GitState
}

// Wait waits for the task's outcome (its report written) or ctx's end.
func (t *Task) Wait(ctx context.Context) (*Outcome, error) {
	select {
	case <-t.done:
		return t.out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// MaxPromptBytes bounds a task's prompt: a longer text belongs in a file of
// the workspace that the prompt names.
const MaxPromptBytes = 256 << 10

// PromptTooLargeError is the error of a prompt over MaxPromptBytes.
type PromptTooLargeError struct{ Size int }

func (e *PromptTooLargeError) Error() string {
	return fmt.Sprintf("the prompt is %.1f KiB; agentls takes prompts of up to %d KiB: put long text in a file of the workspace and name the file in the prompt", float64(e.Size)/1024, MaxPromptBytes>>10)
}

// Start starts a task (a follow-up when spec.FollowUp is set, a resume when
// spec.ResumeID is). An empty spec.Kind is decided from the prompt
// (DecideMode). The task reports to port until it ends; then the host
// writes its report and sets its outcome.
func (h *Host) Start(ctx context.Context, spec agent.TaskSpec, port Port) (*Task, error) {
	if n := len(spec.Prompt); n > MaxPromptBytes {
		return nil, &PromptTooLargeError{Size: n}
	}
	for _, id := range []string{spec.FollowUp, spec.ResumeID} {
		if id == "" {
			continue
		}
		if err := agent.CheckTaskID(id); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnknownTask, err)
		}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errClosed
	}
	h.running.Add(1)
	h.mu.Unlock()
	started := false
	defer func() {
		if !started {
			h.running.Done()
		}
	}()
	settings, err := h.confirmSettings(ctx, h.Settings(), spec.Prompt, port)
	if err != nil {
		return nil, err
	}
	client, err := h.modelClient(settings)
	if err != nil {
		return nil, err
	}
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	spec = h.prompts.Expand(spec, ws.Roots(), h.Redactor())
	if spec.Kind == "" && spec.ResumeID == "" {
		spec.Kind = DecideMode(spec.Prompt)
	}
	hk := h.hooks(ws, settings)
	if spec.ResumeID == "" {
		extra, err := hk.BeforeTask(ctx, spec)
		if err != nil {
			h.logger().Warn("prompt refused by a hook", "error", err)
			return nil, err
		}
		spec.Prompt += extra
	}
	// Read before the task's first tool runs: the files the user had
	// modified.
	t := &Task{h: h, done: make(chan struct{}), hooks: hk, git: newTaskGit(ctx, ws.Roots()[0], h.gitRunner(settings.Sandbox, ws.Roots()))}
	if spec.Kind == agent.KindEdit || spec.ResumeID != "" {
		// Only edit tasks get tools that act (ask and plan tasks read).
		t.mcp = h.taskServers(ctx, settings, spec.Prompt, ws, port)
	}
	// The task's gate: its tools are built on it, and it knows what the
	// task changed.
	guard := agent.NewGuard()
	hk.Bind(guard, h.Redactor().String)
	sync := func(ctx context.Context) string {
		note, user := h.syncBuffers(ctx, ws, port, guard.Changes())
		if len(user) > 0 {
			what := commandOf(ctx)
			if t.bufs.add(what, user, false, "unsaved: "+strings.Join(user, ", ")) {
				guard.Warn(fmt.Sprintf("%s unsaved changes of yours; %s ran on the saved copy", filesPhrase(user), what))
			}
		}
		return note
	}
	cfg, st := h.agentConfig(ctx, ws, settings)
	cfg.StopHook = hk.Stop()
	if cfg.Check != nil {
		t.check = &checkBaseline{next: savingCheck{next: cfg.Check, sync: sync}}
		cfg.Check = t.check
	}
	var fallback DiagnosticsSource
	if h.opts.LanguageServers != nil {
		fallback = serverDiagnostics{ls: h.opts.LanguageServers, env: LanguageEnv{Workspace: ws, Settings: settings}}
	}
	diags := newDiagnostics(port, ws, fallback)
	t.diags = diags
	if c := spec.Context; diags != nil && spec.Kind == agent.KindEdit && c.File != "" && len(c.Diagnostics) > 0 {
		// "Fix with agent": done only when the editor no longer reports it.
		cfg.Check = fixCheck{next: cfg.Check, d: diags, path: c.File, target: c.Diagnostics[0]}
	}
	resumed, err := h.fromJournal(ctx, st, ws, spec, &cfg)
	if err != nil {
		return nil, err
	}
	conv := h.conversation(spec)
	cfg.Model, cfg.Guard = client, guard
	cfg.Tools = h.toolSet(ws, port, settings, t, conv, guard, sync)
	var at *agent.Task
	if resumed != nil {
		at, err = agent.Continue(ctx, cfg, resumed, port)
	} else {
		at, err = agent.Start(ctx, cfg, spec, port)
	}
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.convs[at.ID()] = conv
	h.mu.Unlock()
	started = true
	t.Task = at
	// A change the editor applied after the task stopped waiting for it
	// (a cancel) joins the task's changes: the report is written again.
	at.OnLateChange(func() {
		if res := at.Result(); res != nil {
			if _, err := h.writeReport(ws, t, res, settings); err != nil {
				h.logger().Warn("task report not rewritten", "task", at.ID(), "error", err)
			}
		}
	})
	h.logger().Info("task started", "task", at.ID(), "kind", at.Spec().Kind)
	go func() {
		defer h.running.Done()
		<-at.Done()
		res := at.Result()
		t.git.end(context.WithoutCancel(ctx), res.Status == agent.StateCancelled)
		out := &Outcome{Result: res, Summary: Summary(res) + t.deniedNote() + t.reviews.note(), Git: t.git.state(), Diagnostics: t.diags.delta()}
		if out.Cost, out.CostKnown = settings.Cost(settings.Model, res.Usage); out.CostKnown {
			out.Summary += fmt.Sprintf(" ($%.4f)", out.Cost)
		}
		path, err := h.writeReport(ws, t, res, settings)
		if err != nil {
			h.logger().Warn("task report not written", "task", at.ID(), "error", err)
		}
		out.Report = path
		h.logger().Info("task ended", "task", at.ID(), "status", res.Status, "stopReason", res.StopReason,
			"modelCalls", res.ModelCalls, "duration", res.Duration)
		t.out = out
		close(t.done)
	}()
	return t, nil
}

// Run starts a task and waits for its outcome.
func (h *Host) Run(ctx context.Context, spec agent.TaskSpec, port Port) (*Outcome, error) {
	t, err := h.Start(ctx, spec, port)
	if err != nil {
		return nil, err
	}
	<-t.done
	return t.out, nil
}

// Task returns the live or ended task id of this host, or nil.
func (h *Host) Task(id string) *agent.Task { return h.tasks.Task(id) }

// Tasks returns the tasks of this host, oldest first.
func (h *Host) Tasks() []*agent.Task { return h.tasks.Tasks() }

// Cancel cancels task id of this host. It reports whether the task was
// still running.
func (h *Host) Cancel(id string) (bool, error) {
	t := h.tasks.Task(id)
	if t == nil {
		return false, fmt.Errorf("no task %q in this session", id)
	}
	if t.State().Terminal() {
		return false, nil
	}
	t.Cancel()
	h.logger().Info("task cancelled", "task", id)
	return true, nil
}

// agentConfig is the loop's configuration under settings, recorded in the
// workspace's session store, which it returns (nil when it cannot be
// opened: then nothing is recorded).
func (h *Host) agentConfig(ctx context.Context, ws *workspace.Workspace, s Settings) (agent.Config, *store.Store) {
	root := ws.Roots()[0]
	cfg := agent.Config{
		Root:          root,
		ModelName:     s.Model,
		ContextWindow: s.ContextWindow,
		MaxTurns:      s.MaxTurns,
		MaxTokens:     s.MaxTokens,
		MaxTime:       time.Duration(s.MaxTime),
		Validate:      agent.ValidateMode(s.Validate),
		Files:         ws,
		NoRecord:      !s.Recordings,
		Registry:      h.tasks,
		Secrets:       h.Secrets,
	}
	if s.CheckCommand != "" {
		cfg.Check = agent.ShellCheck{Dir: root, Command: s.CheckCommand, SecretEnv: []string{s.APIKeyEnv},
			Sandbox: s.Sandbox, Network: s.CommandNetwork.All, Proxy: s.CommandNetwork.Proxy(h.logger()), Roots: ws.Roots()}
	}
	st, err := h.Store(ctx)
	if err != nil {
		h.logger().Warn("tasks are not stored", "error", err)
		return cfg, nil
	}
	cfg.Recorder = journal.NewWriter(st)
	return cfg, st
}

// fromJournal reads back from the session store st what a task of spec
// starts from, into cfg: the record of the interrupted task spec.ResumeID
// names (returned; the task continues from it), the lessons of earlier
// failed tasks about the task, and the task of an earlier run it follows
// up. A resumed task that has a history gets neither: it goes on where
// it stopped.
func (h *Host) fromJournal(ctx context.Context, st *store.Store, ws *workspace.Workspace, spec agent.TaskSpec, cfg *agent.Config) (*journal.Resumed, error) {
	var resumed *journal.Resumed
	if spec.ResumeID != "" {
		var loader journal.TaskLoader
		if st != nil {
			loader = st
		}
		r, err := journal.Resume(ctx, loader, spec.ResumeID, ws, ws.Roots()[0])
		if err != nil {
			return nil, err
		}
		if spec, err = agent.ResumedSpec(r); err != nil {
			return nil, err
		}
		if len(r.History) > 0 {
			return r, nil
		}
		resumed = r
	}
	if st == nil {
		return resumed, nil
	}
	cfg.Lessons = journal.Lessons(ctx, st, agent.LessonAbout(spec))
	if id := spec.FollowUp; id != "" && h.tasks.Task(id) == nil {
		e, err := journal.Earlier(ctx, st, id)
		if err != nil {
			if resumed != nil {
				return nil, fmt.Errorf("resume %s: %w", resumed.ID, err)
			}
			return nil, fmt.Errorf("start task: %w", err)
		}
		cfg.Earlier = e
	}
	return resumed, nil
}

// conversation returns the conversation a task of spec belongs to: that
// of the task it follows up or resumes, else a new one.
func (h *Host) conversation(spec agent.TaskSpec) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.convs == nil {
		h.convs = map[string]string{}
	}
	for _, id := range []string{spec.FollowUp, spec.ResumeID} {
		if c := h.convs[id]; id != "" && c != "" {
			return c
		}
	}
	h.nconv++
	return fmt.Sprintf("conversation-%d", h.nconv)
}

// toolSet builds the tools of task t: edits through the port's editor,
// approvals through the guard (the task's state) and the task's approval
// policy (rules and memory, asking the port), the shared search index and
// command tracker.
func (h *Host) toolSet(ws *workspace.Workspace, port Port, s Settings, t *Task, conv string, g *agent.Guard, sync func(context.Context) string) []tools.Tool {
	h.syncMu.Lock()
	idx := h.index
	h.syncMu.Unlock()
	var ed workspace.Editor = ws.DiskEditor()
	if pe := port.Editor(ws); pe != nil {
		ed = pe
	}
	rev := reviewEditor{next: ed, mode: s.Review, ws: ws, port: port, perm: h.perm, log: &t.reviews, task: func() (string, string) { return g.TaskID(), t.Spec().Prompt }}
	ed = gitWarnEditor{next: rev, git: t.git, warn: g.Warn}
	ed = agentTextEditor{next: ed, ws: ws, texts: &h.agentTexts}
	policy, errs := s.Policy()
	for _, err := range errs {
		h.logger().Warn("safe command ignored", "error", err)
	}
	ap := g.Approver(&approvalPolicy{h: h, perm: h.perm, port: port, root: ws.Roots()[0], stateDir: ws.StateDir(), settings: s, shell: policy, conv: conv, refused: t.noteDenied,
		task: func() (string, string) { return g.TaskID(), t.Spec().Prompt }, reviewed: rev.coversPath})
	forward := port.ForwardLSP
	out, closeTools := h.taskTools(s, forward, tools.Env{
		Workspace: ws,
		Editor:    g.Editor(ws, ed),
		Approver:  ap,
		Index:     idx,
		Commands:  h.commands,
		SecretEnv: []string{s.APIKeyEnv},
		Shown:     func(text string) string { return h.Redactor().String(text) },
		Sandbox:   s.Sandbox,
		Network:   s.CommandNetwork.All,
		Proxy:     s.CommandNetwork.Proxy(h.logger()),
	})
	g.OnDone(closeTools)
	// The MCP servers' tools, after the built-in ones (a stable order),
	// asked about through the same task approvals.
	out = append(out, t.mcp.Tools(func() mcp.Launch { return h.mcpLaunch(ws, s) }, ap, g, port)...)
	// Behaviour attaches by what a tool does, never by its name: a
	// program sees the task's buffers on disk; a write is followed by
	// the editor's diagnostics and preceded by the check's baseline.
	hookEnv := extensions.ToolEnv{Workspace: ws, Guard: g, Sync: sync,
		Changes: func(deltas []workspace.FileDelta) string { return commandChanges(ws, g, deltas) }}
	for i, tool := range out {
		eff := tool.Effects()
		switch {
		case eff.Has(tools.RunsProgram):
			tool = savingTool{Tool: tool, sync: sync, ws: ws, guard: g, bufs: &t.bufs}
		case eff.Has(tools.WritesFiles):
			tool = reportedTool{Tool: tool, log: &t.edits}
			if t.diags != nil {
				tool = diagnosticsTool{Tool: tool, d: t.diags}
			}
			if t.check != nil {
				tool = baselineTool{Tool: tool, check: t.check}
			}
		}
		tool = gitReadyTool{Tool: tool, git: t.git}
		// Outermost: a blocked call does nothing at all.
		out[i] = t.hooks.WrapTool(tool, hookEnv)
	}
	return out
}

// ReportPath is where the report of task id is written.
func ReportPath(ws *workspace.Workspace, id string) string {
	return filepath.Join(ws.StateDir(), ReportDir, id+".md")
}

// ReportIfWritten returns the report path of task id when the report
// exists; "" for an id of another form than agentls's (agent.CheckTaskID),
// which names no report.
func (h *Host) ReportIfWritten(ctx context.Context, id string) string {
	if agent.CheckTaskID(id) != nil {
		return ""
	}
	ws, err := h.Workspace(ctx)
	if err != nil {
		return ""
	}
	p := ReportPath(ws, id)
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return p
}

// writeReport writes the report of a task that ended.
func (h *Host) writeReport(ws *workspace.Workspace, t *Task, res *agent.Result, s Settings) (string, error) {
	if res == nil {
		return "", errors.New("the task has no result")
	}
	path := ReportPath(ws, res.TaskID)
	// In .agentls/tasks, following no link: a refused state folder (a
	// repository's .agentls that is or holds a link) gets no report.
	state, err := ws.OpenState()
	if err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	defer state.Close()
	dir, err := state.OpenDir(ReportDir, true, 0o755)
	if err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	defer dir.Close()
	text := Report(res, t.Started()) + GitSection(t.git.state()) + diagnosticsSection(t.diags.delta()) + t.check.section() + t.hooks.Section() + t.mcp.Section() + t.edits.section() + t.bufs.section() + t.reviews.section()
	if cost, ok := s.Cost(s.Model, res.Usage); ok {
		text += fmt.Sprintf("\n## Cost\n\n$%.4f for %d input (%d cached) and %d output tokens of %s, at the prices in the settings\n",
			cost, res.Usage.InputTokens, res.Usage.CachedTokens, res.Usage.OutputTokens, s.Model)
	}
	// The whole report, not only the answer: plan items, notes and diffs
	// hold the model's text too, and an editor previews the file.
	text = render.Inert(h.Redactor().String(text))
	if err := dir.WriteFile(filepath.Base(path), []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return path, nil
}
