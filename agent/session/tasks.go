package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// PromptPreviewRunes bounds the prompt a task listing carries: a listing
// stays small however long the prompts were.
const PromptPreviewRunes = 200

// TaskInfo is one task as listed: a task of this host, or one the session
// store keeps from an earlier run.
type TaskInfo struct {
	ID       string       `json:"id"`
	Prompt   string       `json:"prompt"` // a preview, at most PromptPreviewRunes
	Mode     string       `json:"mode"`
	State    string       `json:"state"`
	Plan     PlanProgress `json:"plan"`
	Started  time.Time    `json:"started"`
	Duration int64        `json:"duration"` // milliseconds, so far for a running task
	Report   string       `json:"report,omitempty"`
	// Interrupted: left in a live state by an earlier process (crash,
	// kill); Resume continues it.
	Interrupted bool `json:"interrupted,omitempty"`
	// Undone: the task's edits were reverted since (Undo); its State is
	// still how it ended.
	Undone     bool   `json:"undone,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	Summary    string `json:"summary,omitempty"`
	LLMCalls   int    `json:"llmCalls"`
	FollowUpOf string `json:"followUpOf,omitempty"`
}

// PlanProgress is how far a task's plan is.
type PlanProgress struct {
	Done  int      `json:"done"`  // items done or skipped
	Total int      `json:"total"` // items
	Items []string `json:"items"` // "[x] text", one per item
}

// Filter selects tasks of a listing. Zero fields do not filter.
type Filter struct {
	// States keeps tasks in any of these states: completed, failed,
	// cancelled, a live state, "live" (any live state), or "interrupted".
	States []string
	Since  time.Time // started at or after
	Limit  int       // stored tasks listed (default 100)
}

func (f Filter) keep(state string, interrupted bool, started time.Time) bool {
	if !f.Since.IsZero() && started.Before(f.Since) {
		return false
	}
	if len(f.States) == 0 {
		return true
	}
	for _, want := range f.States {
		switch want {
		case state:
			return true
		case "interrupted":
			if interrupted {
				return true
			}
		case "live":
			if !store.Terminal(state) {
				return true
			}
		}
	}
	return false
}

// PlanLine is one checklist line: [x] done, [ ] pending, [-] skipped,
// [>] in progress.
func PlanLine(it tools.PlanItem) string {
	line := it.Status.Mark() + " " + it.Text
	if it.Status == tools.PlanSkipped && it.Reason != "" {
		line += " (" + it.Reason + ")"
	}
	return line
}

func progressOf(p tools.Plan) PlanProgress {
	pp := PlanProgress{Total: len(p.Items), Items: []string{}}
	for _, it := range p.Items {
		if it.Status == tools.PlanDone || it.Status == tools.PlanSkipped {
			pp.Done++
		}
		pp.Items = append(pp.Items, PlanLine(it))
	}
	return pp
}

func preview(s string) string {
	r := []rune(s)
	if len(r) <= PromptPreviewRunes {
		return s
	}
	return string(r[:PromptPreviewRunes-1]) + "…"
}

// info describes a task of this host.
func (h *Host) info(ctx context.Context, t *agent.Task) TaskInfo {
	end := time.Now()
	ti := TaskInfo{ID: t.ID(), Prompt: preview(t.Spec().Prompt), Mode: string(t.Spec().Kind), State: string(t.State()),
		Plan: progressOf(t.Plan()), Started: t.Started().UTC().Truncate(time.Millisecond)}
	if res := t.Result(); res != nil {
		end = t.Started().Add(res.Duration)
		ti.StopReason, ti.LLMCalls, ti.Summary = string(res.StopReason), res.ModelCalls, Summary(res)
		ti.Report = h.ReportIfWritten(ctx, t.ID())
	}
	ti.Duration = end.Sub(t.Started()).Milliseconds()
	return ti
}

// List lists this host's tasks and the stored ones of earlier runs
// (interrupted ones flagged), oldest first.
func (h *Host) List(ctx context.Context, f Filter) ([]TaskInfo, error) {
	out := []TaskInfo{}
	var stored []store.Task
	undone := map[string]bool{}
	if _, err := h.Workspace(ctx); err == nil {
		st, err := h.Store(ctx)
		if err != nil {
			return nil, err
		}
		if stored, err = st.Tasks(ctx, store.TaskFilter{Since: f.Since, Limit: f.Limit}); err != nil {
			return nil, err
		}
		for _, t := range stored {
			undone[t.ID] = !t.UndoneAt.IsZero()
		}
	}
	mine := map[string]bool{}
	for _, t := range h.tasks.Tasks() {
		mine[t.ID()] = true
		ti := h.info(ctx, t)
		ti.Undone = undone[ti.ID]
		if f.keep(ti.State, false, ti.Started) {
			out = append(out, ti)
		}
	}
	for i := len(stored) - 1; i >= 0; i-- { // oldest first
		t := stored[i]
		if mine[t.ID] {
			continue
		}
		interrupted := !store.Terminal(t.State)
		if !f.keep(t.State, interrupted, t.CreatedAt) {
			continue
		}
		end := t.EndedAt
		if end.IsZero() {
			end = t.UpdatedAt
		}
		state := t.State
		if interrupted {
			state = "interrupted"
		}
		out = append(out, TaskInfo{ID: t.ID, Prompt: preview(t.Prompt), Mode: t.Kind, State: state,
			Plan: PlanProgress{Items: []string{}}, Started: t.CreatedAt.UTC(), Duration: end.Sub(t.CreatedAt).Milliseconds(),
			Report: h.ReportIfWritten(ctx, t.ID), Interrupted: interrupted, StopReason: t.StopReason,
			Summary: render.Inert(t.Summary), LLMCalls: t.LLMCalls, FollowUpOf: t.FollowUpOf, Undone: !t.UndoneAt.IsZero()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// ErrUnknownTask is returned for a task ID that neither this host nor the
// session store knows.
var ErrUnknownTask = errors.New("no such task")

// ErrRunning is returned for an operation that needs the task ended.
var ErrRunning = errors.New("the task is running")

// TaskResult is what a finished task answered, for any task of this host
// or of the store.
type TaskResult struct {
	TaskID       string   `json:"taskId"`
	Status       string   `json:"status"`
	Summary      string   `json:"summary"`
	Answer       string   `json:"answer"` // the whole answer, never cut
	ChangedFiles []string `json:"changedFiles"`
	Report       string   `json:"report,omitempty"` // absolute path
	// State is the state the task is in, or was left in when it was
	// interrupted (Status then says "interrupted").
	State string `json:"-"`
}

// Result returns the result of task id, from this host or the store.
func (h *Host) Result(ctx context.Context, id string) (*TaskResult, error) {
	if err := agent.CheckTaskID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownTask, err)
	}
	if t := h.tasks.Task(id); t != nil {
		res := t.Result()
		if res == nil {
			return nil, fmt.Errorf("task %s: %w", id, ErrRunning)
		}
		r := &TaskResult{TaskID: id, Status: string(res.Status), Summary: Summary(res), Answer: res.Answer,
			ChangedFiles: []string{}, Report: h.ReportIfWritten(ctx, id), State: string(t.State())}
		for _, f := range res.Files {
			r.ChangedFiles = append(r.ChangedFiles, f.Path)
		}
		return r, nil
	}
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	t, err := st.Task(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("task %q: %w", id, ErrUnknownTask)
	}
	if err != nil {
		return nil, err
	}
	r := &TaskResult{TaskID: id, Status: t.State, Summary: render.Inert(t.Summary), Answer: render.Inert(t.Answer), ChangedFiles: []string{}, Report: h.ReportIfWritten(ctx, id), State: t.State}
	if !store.Terminal(t.State) {
		r.Status = "interrupted"
	}
	if files, err := st.TaskFiles(ctx, id); err == nil {
		for _, f := range files {
			r.ChangedFiles = append(r.ChangedFiles, f.Path)
		}
	}
	return r, nil
}

// liveHere reports whether task id runs in this host now.
func (h *Host) liveHere(id string) bool {
	t := h.tasks.Task(id)
	return t != nil && !t.State().Terminal()
}

// ErrEnded is returned by Resume for a task that has ended: there is
// nothing to resume, a follow-up continues it instead.
var ErrEnded = errors.New("nothing to resume: start a follow-up instead")

// Resumable returns the spec that continues the interrupted stored task id
// under its own ID, or ErrUnknownTask, ErrEnded or ErrRunning. A face that
// must know the task's prompt before it starts it (a progress title) calls
// it, then Start; others call Resume.
func (h *Host) Resumable(ctx context.Context, id string) (agent.TaskSpec, error) {
	if err := agent.CheckTaskID(id); err != nil {
		return agent.TaskSpec{}, fmt.Errorf("%w: %w", ErrUnknownTask, err)
	}
	st, err := h.Store(ctx)
	if err != nil {
		return agent.TaskSpec{}, err
	}
	t, err := st.Task(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return agent.TaskSpec{}, fmt.Errorf("no stored task %q: %w", id, ErrUnknownTask)
	}
	if err != nil {
		return agent.TaskSpec{}, err
	}
	if store.Terminal(t.State) {
		return agent.TaskSpec{}, fmt.Errorf("task %s has ended (%s); %w", t.ID, t.State, ErrEnded)
	}
	if h.liveHere(t.ID) {
		return agent.TaskSpec{}, fmt.Errorf("task %s: %w", t.ID, ErrRunning)
	}
	return agent.TaskSpec{Kind: agent.Kind(t.Kind), Prompt: t.Prompt, ResumeID: t.ID}, nil
}

// Resume continues an interrupted task of the store under its own ID,
// reporting to port like Start.
func (h *Host) Resume(ctx context.Context, id string, port Port) (*Task, error) {
	spec, err := h.Resumable(ctx, id)
	if err != nil {
		return nil, err
	}
	return h.Start(ctx, spec, port)
}

// UndoReport says what undoing a task did, file by file; UndoFile is one
// file of it. The faces name them here, not in the journal.
type (
	UndoReport = journal.UndoReport
	UndoFile   = journal.UndoFile
)

// RevertDelete is the Action of a file the undo deleted (the task created
// it and nobody changed it since).
const RevertDelete = journal.RevertDelete

// Undo reverts every edit of task id through ed (nil: on disk), three-way
// around what the user changed since.
func (h *Host) Undo(ctx context.Context, id string, ed workspace.Editor) (*UndoReport, error) {
	if err := agent.CheckTaskID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownTask, err)
	}
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	if h.liveHere(id) {
		return nil, fmt.Errorf("task %s: %w; cancel it first", id, ErrRunning)
	}
	if ed == nil {
		ed = ws.DiskEditor()
	}
	rep, err := journal.Undo(ctx, st, id, ws, ed)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no stored task %q: %w", id, ErrUnknownTask)
	}
	if err != nil {
		return nil, err
	}
	h.logger().Info("task undone", "task", rep.TaskID, "reverted", len(rep.Reverted), "notReverted", len(rep.NotReverted))
	if len(rep.Reverted)+len(rep.Unchanged) > 0 {
		// Listed as undone from now on, in every face; flushed so the
		// next listing sees it.
		if err := st.MarkUndone(id, time.Time{}); err == nil {
			err = st.Flush(ctx)
		}
		if err != nil {
			h.logger().Warn("record the undo", "task", id, "err", err)
		}
	}
	return rep, nil
}

// Stats are the statistics of a workspace's stored tasks; ToolStat is one
// tool's line of them. The faces name them here, not in the store.
type (
	Stats    = store.Stats
	ToolStat = store.ToolStat
)

// Stats returns the statistics of the workspace's stored tasks.
func (h *Host) Stats(ctx context.Context, since time.Time, top int) (*Stats, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	return st.Stats(ctx, since, top)
}
