package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aymanbagabas/go-udiff"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

// TaskLoader reads a stored task whole; *store.Store satisfies it.
type TaskLoader interface {
	LoadTask(ctx context.Context, id string) (*store.TaskRecord, error)
}

// Past is a stored task as a follow-up sees it: what it was asked, how it
// ended and its plan.
type Past struct {
	ID, SessionID, Kind, Prompt      string
	State, StopReason, Answer, Error string
	ModelCalls                       int
	Usage                            llm.Usage
	ModelTime, ToolTime              time.Duration
	Plan                             *tools.Plan // nil: the task made none
	PlanUpdates                      int
}

// Earlier reads the ended task id of an earlier run, for a follow-up of
// it. A task that was interrupted is refused: it is resumed first.
func Earlier(ctx context.Context, st TaskLoader, id string) (*Past, error) {
	if st == nil {
		return nil, fmt.Errorf("follow-up of unknown task %q", id)
	}
	rec, err := st.LoadTask(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("follow-up of task %q: %w", id, err)
	}
	if !store.Terminal(rec.State) {
		return nil, fmt.Errorf("follow-up of task %s: it was interrupted (%s); resume it first", id, rec.State)
	}
	p, err := pastOf(rec)
	if err != nil {
		return nil, fmt.Errorf("follow-up of task %s: %w", id, err)
	}
	return p, nil
}

func pastOf(rec *store.TaskRecord) (*Past, error) {
	plan, err := StoredPlan(rec)
	if err != nil {
		return nil, err
	}
	p := &Past{
		ID: rec.ID, SessionID: rec.SessionID, Kind: rec.Kind, Prompt: rec.Prompt,
		State: rec.State, StopReason: rec.StopReason, Answer: rec.Answer, Error: rec.Error,
		ModelCalls: rec.LLMCalls, Usage: llm.Usage(rec.Usage), ModelTime: rec.ModelTime, ToolTime: rec.ToolTime,
		Plan: plan,
	}
	if plan != nil {
		p.PlanUpdates = rec.PlanSeq
	}
	return p, nil
}

// Resumed is what the resumed run of an interrupted task starts from: the
// task as stored, its history, totals, plan and edits, and what changed
// outside it since its last step.
type Resumed struct {
	Past
	FollowUp string
	// EditorContext is the JSON of the task's editor context; nil when it
	// had none.
	EditorContext json.RawMessage
	// History is the model's context as stored (excluded messages left
	// out, reasoning dropped), each with its Seq; NextSeq numbers the next
	// message.
	History []StoredTurn
	NextSeq int
	// ToolCalls are the task's finished calls, in order.
	ToolCalls []store.ToolCall
	// Files are the task's edits, one change per file.
	Files []store.FileChange
	// Outside are the files the task changed that were changed outside
	// it since its last step.
	Outside []Outside
}

// Outside is a file a task changed that changed outside the task since
// its last step: it could not be read (Err), was deleted (Deleted), was
// created again after the task deleted it (Recreated), or its text
// differs from what the task left (Diff: the task's text -> the text now).
type Outside struct {
	Path               string
	Err                error
	Deleted, Recreated bool
	Diff               string
}

// StoredTurn is one message of a stored history and its Seq.
type StoredTurn struct {
	Seq     int
	Message llm.Message
}

// Resume reads back the interrupted task taskID, for its resumed run: a
// task that ended is refused (a follow-up continues it). files reads the
// workspace as the tools do (nil: the disk under root), to see what
// changed outside the task.
func Resume(ctx context.Context, st TaskLoader, taskID string, files Files, root string) (*Resumed, error) {
	if st == nil {
		return nil, fmt.Errorf("resume %s: %w", taskID, ErrNoStore)
	}
	rec, err := st.LoadTask(ctx, taskID)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", taskID, err)
	}
	if store.Terminal(rec.State) {
		return nil, fmt.Errorf("resume %s: the task has ended (%s); start a follow-up instead", taskID, rec.State)
	}
	past, err := pastOf(rec)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", taskID, err)
	}
	r := &Resumed{Past: *past, FollowUp: rec.FollowUpOf, EditorContext: rec.EditorContext, NextSeq: rec.NextSeq, ToolCalls: rec.ToolCalls}
	r.PlanUpdates = rec.PlanSeq
	for _, m := range rec.Messages {
		if m.Excluded {
			continue
		}
		hm := historyMessage(m)
		hm.Reasoning = ""
		r.History = append(r.History, StoredTurn{Seq: m.Seq, Message: hm})
	}
	r.Files = store.FileChanges(rec.Edits)
	for _, fc := range r.Files {
		cur, exists, err := ReadText(ctx, files, root, fc.Path)
		switch {
		case err != nil:
			r.Outside = append(r.Outside, Outside{Path: fc.Path, Err: err})
		case !exists && !fc.Deleted:
			r.Outside = append(r.Outside, Outside{Path: fc.Path, Deleted: true})
		case exists && fc.Deleted:
			r.Outside = append(r.Outside, Outside{Path: fc.Path, Recreated: true})
		case exists && cur != fc.After:
			r.Outside = append(r.Outside, Outside{Path: fc.Path, Diff: udiff.Unified("a/"+fc.Path, "b/"+fc.Path, fc.After, cur)})
		}
	}
	return r, nil
}
