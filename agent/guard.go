package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Guard is a task's gate for side effects: every edit and approval of the
// task passes through it, and is rejected with a clear error when the task
// is not executing or its context is done. The host makes it (NewGuard),
// builds the task's tools with it and passes both in Config; Start binds
// it to the task. Until then it has no task: Check fails and nothing is
// recorded.
type Guard struct {
	task *Task // set once by Start, before any tool can run

	mu       sync.Mutex // guards cleanups and warnings
	cleanups []func()
	warnings []Event // raised before the task started, shown when it starts
}

// NewGuard returns the guard of a task about to start: one per task.
func NewGuard() *Guard { return &Guard{} }

// bind makes t the guarded task and shows the warnings raised so far in
// its progress.
func (g *Guard) bind(t *Task) {
	if g.task != nil {
		panic("agent: a guard guards one task") // a host bug: tools of two tasks would share it
	}
	g.task = t
	g.mu.Lock()
	ws := g.warnings
	g.warnings = nil
	g.mu.Unlock()
	for _, w := range ws {
		w.TaskID = t.id
		t.sink.emit(w)
	}
}

// errNoTask is Check's error for a guard whose task has not started.
var errNoTask = errors.New("the task has not started")

// OnDone registers f to run when the task's loop has ended, before its
// result is published (e.g. closing the task's tool registry, which kills
// its commands).
func (g *Guard) OnDone(f func()) {
	g.mu.Lock()
	g.cleanups = append(g.cleanups, f)
	g.mu.Unlock()
}

func (g *Guard) done() {
	g.mu.Lock()
	fs := g.cleanups
	g.cleanups = nil
	g.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// Check returns nil only while the task is executing and ctx is live.
func (g *Guard) Check(ctx context.Context) error {
	if g.task == nil {
		return fmt.Errorf("%w: %w", errNoTask, ErrNotExecuting)
	}
	return g.task.checkRunning(ctx)
}

// Warn shows text in the task's progress as a note (EventNote), e.g. a
// warning a tool wrapper raises before an edit is applied. A warning
// raised while the tools are built, before the task starts, is shown
// when it starts.
func (g *Guard) Warn(text string) { g.note(Event{Kind: EventNote, Text: text}) }

// Problem shows text in the task's progress as a note that reports a
// failure of the user's own programs (Event.Problem): faces show it whole.
func (g *Guard) Problem(text string) { g.note(Event{Kind: EventNote, Text: text, Problem: true}) }

func (g *Guard) note(e Event) {
	if g.task == nil {
		g.mu.Lock()
		g.warnings = append(g.warnings, e)
		g.mu.Unlock()
		return
	}
	e.TaskID = g.task.id
	g.task.sink.emit(e)
}

// TaskID returns the guarded task's ID; "" before it starts.
func (g *Guard) TaskID() string {
	if g.task == nil {
		return ""
	}
	return g.task.id
}

// Changes returns, for each file the task changed so far, its text before
// the task's first change and after its last; known is false for a file
// known by name only. None before the task starts.
func (g *Guard) Changes() []Change {
	if g.task == nil {
		return nil
	}
	return g.task.changes.snapshot()
}

// RecordCommandChange notes that a command the task ran changed path:
// from before to after when both texts are known (known), created it
// (created), or, with known false, changed it in a way agentls cannot
// restore (listed by name only).
func (g *Guard) RecordCommandChange(path, before, after string, known, created bool) {
	if g.task == nil {
		return
	}
	if !known {
		g.task.changes.touch(path)
		return
	}
	g.task.changes.record(path, before, after)
	g.task.recordEdit(path, before, after, created)
}

// RecordChange notes that the task changed path from before to after; the
// result shows one unified diff per file.
func (g *Guard) RecordChange(path, before, after string) {
	if g.task == nil {
		return
	}
	g.task.changes.record(path, before, after)
	g.task.recordEdit(path, before, after, false)
}

// Approver wraps a (the approval policy) so that a request of a task that
// is not executing is denied with an error, a request is visible on the
// task while pending and its answer is recorded. The request carries the
// call it is made in (tools.CallFrom). What is allowed, asked or
// remembered is the policy's business, not the guard's.
func (g *Guard) Approver(a tools.Approver) tools.Approver {
	if a == nil {
		return nil
	}
	return &guardedApprover{g: g, next: a}
}

type guardedApprover struct {
	g    *Guard
	next tools.Approver
}

func (a *guardedApprover) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	if c, ok := tools.CallFrom(ctx); ok {
		// A tool that asks without naming its call (MCP, language servers)
		// asks for the call it runs in.
		if req.CallID == "" {
			req.CallID, req.Args = c.ID, c.Args
		}
		if req.Effects == 0 {
			req.Effects = c.Effects
		}
	}
	if err := a.g.Check(ctx); err != nil {
		return tools.Deny, fmt.Errorf("approve %s: %w", req.Summary, err)
	}
	if k := a.g.task.spec.Kind; k != KindEdit && !req.Secret { // reading a secret file asks in every kind
		return tools.Deny, fmt.Errorf("approve %s: a %s task writes nothing and runs no command", req.Summary, k)
	}
	t := a.g.task
	t.mu.Lock()
	asked := &req
	t.pending = append(t.pending, asked)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		for i := range t.pending {
			if t.pending[i] == asked {
				t.pending = append(t.pending[:i], t.pending[i+1:]...)
				break
			}
		}
		t.mu.Unlock()
	}()
	d, err := a.next.Approve(ctx, req)
	if err != nil {
		return tools.Deny, err
	}
	t.recordApproval(req, d)
	if err := a.g.Check(ctx); err != nil {
		return tools.Deny, fmt.Errorf("approve %s: %w", req.Summary, err)
	}
	return d, nil
}

// PendingApprovals returns the approval requests the task is waiting on.
func (t *Task) PendingApprovals() []tools.ApprovalRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]tools.ApprovalRequest, len(t.pending))
	for i, p := range t.pending {
		out[i] = *p
	}
	return out
}

// clarifyTool lets the model ask the user one question. A second
// question is not asked: the model is told to proceed.
type clarifyTool struct {
	c     Clarifier
	asked bool
}

func (*clarifyTool) Name() string { return "ask_user" }
func (*clarifyTool) Description() string {
	return "Ask the user one clarifying question when the task is truly ambiguous. You get at most one question per task; an empty answer means: proceed with your best interpretation."
}
func (*clarifyTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"one short question"}},"required":["question"]}`)
}
func (*clarifyTool) ReadOnly() bool        { return true }
func (*clarifyTool) Effects() tools.Effect { return 0 }

// Present implements tools.Tool.
func (*clarifyTool) Present(json.RawMessage, *tools.Result) tools.Presentation {
	return tools.Presentation{Title: "Ask you a question", Activity: "asking you a question", Kind: tools.KindOther}
}

func (c *clarifyTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var in struct {
		Question string `json:"question"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Question == "" {
		return tools.Result{IsError: true, Text: `error: ask_user needs {"question": "..."}`}, nil
	}
	if c.asked {
		return tools.Result{Text: "You already asked your one question. Do not ask again: proceed with your best interpretation."}, nil
	}
	c.asked = true
	ans, err := c.c.Clarify(ctx, in.Question)
	if err != nil {
		return tools.Result{}, fmt.Errorf("ask_user: %w", err)
	}
	if ans == "" {
		return tools.Result{Text: "The user gave no answer: proceed with your best interpretation."}, nil
	}
	return tools.Result{Text: "The user answered: " + ans}, nil
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

// FileReader reads a workspace file as the tools see it (buffer first);
// *workspace.Workspace satisfies it.
type FileReader interface {
	ReadFile(ctx context.Context, p workspace.Path) (*workspace.File, error)
}

// Editor wraps ed so that every Apply of the task is refused unless the
// task is executing and live (nothing is applied after a cancel, and
// nothing is silently dropped), and each applied change is recorded for the
// result's diff. r reads a file's text before the change; nil records
// changed paths by name only.
func (g *Guard) Editor(r FileReader, ed workspace.Editor) workspace.Editor {
	return &guardedEditor{g: g, r: r, next: ed}
}

type guardedEditor struct {
	g    *Guard
	r    FileReader
	next workspace.Editor
}

func (e *guardedEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	if err := e.g.Check(ctx); err != nil {
		return fmt.Errorf("apply %s: %w", label, err)
	}
	if k := e.g.task.spec.Kind; k != KindEdit {
		return fmt.Errorf("apply %s: a %s task changes no file", label, k)
	}
	type snap struct {
		path          string
		before, after string
		ok, created   bool
	}
	snaps := make([]snap, 0, len(edits))
	for _, fe := range edits {
		s := snap{path: fe.Path.String(), created: fe.Create}
		before := ""
		ok := true
		if !fe.Create && e.r != nil {
			f, err := e.r.ReadFile(ctx, fe.Path)
			if err != nil {
				ok = false
			} else {
				before = f.Text
			}
		} else if e.r == nil {
			ok = false
		}
		if ok {
			after, err := workspace.ApplyEdits(before, fe.Edits)
			s.before, s.after, s.ok = before, after, err == nil
		}
		snaps = append(snaps, s)
	}
	if err := e.next.Apply(ctx, label, edits); err != nil {
		var rejected *workspace.RejectedError
		if errors.As(err, &rejected) {
			// The user reviewed the change: only what was kept is the
			// task's (result, report, undo).
			for _, f := range rejected.Files {
				if f.Applied() {
					e.g.task.changes.record(f.Path.String(), f.Before, f.After)
					e.g.task.recordEdit(f.Path.String(), f.Before, f.After, f.Create)
				}
			}
			return err
		}
		var pending *workspace.PendingError
		if errors.As(err, &pending) {
			// The editor may still apply it: if it does, the change joins
			// the task's changes (result, report, undo) even after its end.
			go func() {
				if !pending.Applied() {
					return
				}
				for _, s := range snaps {
					e.g.task.lateChange(s.path, s.before, s.after, s.ok, s.created)
				}
			}()
		}
		return err
	}
	for _, s := range snaps {
		if s.ok {
			e.g.task.changes.record(s.path, s.before, s.after)
			e.g.task.recordEdit(s.path, s.before, s.after, s.created)
		} else {
			e.g.task.changes.touch(s.path)
		}
	}
	return nil
}
