package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// Kind says what a task may do.
type Kind string

const (
	KindAsk  Kind = "ask"  // answer a question: read-only tools only
	KindEdit Kind = "edit" // change the workspace
	// KindPlan explores with read-only tools and ends with a plan: the
	// checklist, the files it would change and the commands it would run.
	// Nothing is written and no command runs (enforced by the tool set and
	// the guard, not by the prompt).
	KindPlan Kind = "plan"
)

// Diagnostic is one problem the editor reported at the task's range.
type Diagnostic struct {
	Severity string `json:"severity,omitempty"` // "error", "warning", ...
	Line     int    `json:"line"`               // 1-based
	Message  string `json:"message"`
	Source   string `json:"source,omitempty"`
}

// EditorContext is what the editor knew when the task started. Every field
// is optional.
type EditorContext struct {
	File        string       `json:"file,omitempty"`      // workspace-relative path
	StartLine   int          `json:"startLine,omitempty"` // 1-based, inclusive
	EndLine     int          `json:"endLine,omitempty"`
	Selection   string       `json:"selection,omitempty"` // the selected text
	Symbol      string       `json:"symbol,omitempty"`    // the symbol under the cursor
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
}

// TaskSpec is what a caller asks for.
type TaskSpec struct {
	Kind    Kind
	Prompt  string
	Context EditorContext
	// Images are pictures the user attached to the prompt (the ACP face):
	// the task message carries them as image parts. The LSP face sends none.
	Images []llm.Image
	// FollowUp is the ID of an earlier task (of the registry, or of an
	// earlier run: Config.Earlier) that this one continues: its prompt and
	// result are shown to the model.
	FollowUp string
	// Resume is the conversation of an interrupted earlier run of this task
	// (its turns after the task message, e.g. loaded after a crash). It is
	// repaired before the first model call.
	Resume []llm.Message
	// ResumeID, when set, makes the host's Start resume that interrupted
	// task from the session store (journal.Resume, then Continue) instead
	// of starting a new one; the other fields are then taken from the
	// store. The loop's Start refuses it.
	ResumeID string
}

// FileChange is one file the task changed.
type FileChange struct {
	Path string `json:"path"`
	Diff string `json:"diff"` // unified diff, "" when only known by name (e.g. changed by a command)
}

// ToolStat sums the calls of one tool in a task.
type ToolStat struct {
	Calls    int           `json:"calls"`
	Errors   int           `json:"errors"`
	Duration time.Duration `json:"duration"`
}

// Result is what a finished task reports.
type Result struct {
	TaskID      string              `json:"taskId"`
	Kind        Kind                `json:"kind"`
	Prompt      string              `json:"prompt"`
	Status      State               `json:"status"` // completed, failed or cancelled
	StopReason  StopReason          `json:"stopReason"`
	Answer      string              `json:"answer"` // markdown
	Error       string              `json:"error,omitempty"`
	Files       []FileChange        `json:"files,omitempty"`
	Plan        tools.Plan          `json:"plan"`
	PlanUpdates int                 `json:"planUpdates"`
	ModelCalls  int                 `json:"modelCalls"`
	Usage       llm.Usage           `json:"usage"`
	ModelTime   time.Duration       `json:"modelTime"`
	ToolTime    time.Duration       `json:"toolTime"`
	Duration    time.Duration       `json:"duration"`
	Tools       map[string]ToolStat `json:"tools,omitempty"`
	Notes       []string            `json:"notes,omitempty"` // messages the loop injected, in order
	// PlannedFiles are the files a plan task's plan would change (its
	// items' files, in order, once each).
	PlannedFiles []string `json:"plannedFiles,omitempty"`
	// Commands are the commands the task ran (run_command), in order, with
	// their exit status, for the report.
	Commands []tools.CommandOutput `json:"commands,omitempty"`
	// Instructions are the project instruction files (AGENTS.md, ...) the
	// model was given in its system prompt.
	Instructions []InstructionFile `json:"instructions,omitempty"`
}

// Task is one unit of agent work. Everything a task owns lives here:
// its state, conversation, plan, usage and changes; there are no side maps.
type Task struct {
	id     string
	spec   TaskSpec
	cancel context.CancelFunc
	sink   *taskSink
	done   chan struct{}
	start  time.Time

	rec       Recorder // nil: not recorded
	sessionID string   // the task's session: the first task of a follow-up chain

	mu      sync.Mutex // guards the fields below
	state   State
	history []llm.Message
	plan    tools.Plan
	result  *Result
	changes *changeLog
	pending []*tools.ApprovalRequest // approvals the task waits on

	persistErr error // the first error of the recorder, reported in the notes
	late       bool  // a change the editor applied after the task gave up waiting
	onLate     []func()
}

// OnLateChange registers f to run when a change the editor answered late
// (after a cancel, or after the task ended) joins the task's changes.
func (t *Task) OnLateChange(f func()) {
	t.mu.Lock()
	t.onLate = append(t.onLate, f)
	t.mu.Unlock()
}

// lateChange adds a change the editor applied after the task stopped waiting
// for it: it is listed in the result, stored for undo, and the listeners
// are told.
func (t *Task) lateChange(path, before, after string, known, created bool) {
	if known {
		t.changes.record(path, before, after)
		t.recordEdit(path, before, after, created)
	} else {
		t.changes.touch(path)
	}
	t.mu.Lock()
	t.late = true
	fs := append([]func(){}, t.onLate...)
	t.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// SessionID returns the ID of the task's session: tasks that follow up one
// another share it, across restarts.
func (t *Task) SessionID() string { return t.sessionID }

// ID returns the task's identifier: unique across sessions
// ("<registry>-<n>", e.g. "3fa2c1d0-2").
func (t *Task) ID() string { return t.id }

// Started returns when the task was started.
func (t *Task) Started() time.Time { return t.start }

// Spec returns what the task was started with.
func (t *Task) Spec() TaskSpec { return t.spec }

// State returns the current state.
func (t *Task) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// Plan returns a copy of the current plan.
func (t *Task) Plan() tools.Plan {
	t.mu.Lock()
	defer t.mu.Unlock()
	return copyPlan(t.plan)
}

// History returns a copy of the conversation.
func (t *Task) History() []llm.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]llm.Message(nil), t.history...)
}

// Cancel stops the task: its model call, tools and child processes stop
// with its context, and nothing it produces afterwards is published.
func (t *Task) Cancel() {
	t.sink.cancel()
	t.cancel()
}

// Done is closed when the task has ended and its result is set.
func (t *Task) Done() <-chan struct{} { return t.done }

// Wait blocks until the task ends or ctx is done, and returns its result.
func (t *Task) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-t.done:
		return t.Result(), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for task %s: %w", t.id, ctx.Err())
	}
}

// Result returns the result of an ended task, or nil while it runs.
func (t *Task) Result() *Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result == nil || !t.late {
		return t.result
	}
	r := *t.result
	r.Files = t.changes.list()
	return &r
}

// transition moves the task to a new state if the table allows it.
func (t *Task) transition(to State) error {
	t.mu.Lock()
	from := t.state
	if err := checkTransition(from, to); err != nil {
		t.mu.Unlock()
		return fmt.Errorf("task %s: %w", t.id, err)
	}
	t.state = to
	t.mu.Unlock()
	if !to.Terminal() {
		// A terminal state is recorded with the result (journal.TaskEnded).
		t.record(journal.TaskState{State: string(to)})
	}
	t.sink.emit(Event{TaskID: t.id, Kind: EventState, State: to})
	return nil
}

// checkRunning returns nil only when the task is executing and its context
// is live. Tools and the guarded editor call it before acting.
func (t *Task) checkRunning(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("task %s cancelled: %w", t.id, err)
	}
	if s := t.State(); s != StateExecuting {
		return fmt.Errorf("task %s is %s: %w", t.id, s, ErrNotExecuting)
	}
	return nil
}

func copyPlan(p tools.Plan) tools.Plan {
	return tools.Plan{Items: append([]tools.PlanItem(nil), p.Items...)}
}
