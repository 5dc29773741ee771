package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

// Record is one thing a task writes down as it runs. The set is closed:
// the records below, and nothing else, are what the loop records, and
// Writer.Record stores each in the session store.
type Record interface{ record() }

// TaskCreated: a new task (a resumed one is not created again).
type TaskCreated struct {
	SessionID, Kind, Prompt, FollowUp string
	// EditorContext is the JSON of the task's editor context; nil when empty.
	EditorContext json.RawMessage
	State         string
}

// TaskState: the task moved to a live state (its end is TaskEnded).
type TaskState struct{ State string }

// MessageAdded: the task's next message, numbered Seq. Excluded, when
// set, is why it is kept for the record but not in the model's context
// (ExcludedTruncated, a validator's answer, ...).
type MessageAdded struct {
	Seq       int
	Message   llm.Message
	ModelCall bool // the message is a model response
	Usage     llm.Usage
	Duration  time.Duration
	Excluded  string
}

// MessagesExcluded: messages numbered Seqs leave the model's context, for
// Reason (compacted, repaired).
type MessagesExcluded struct {
	Reason string
	Seqs   []int
}

// ToolCalled: a tool call finished with Result (its text and arguments as
// the store keeps them). CallID is unique within the task.
type ToolCalled struct {
	CallID string
	Result tools.Result
}

// PlanUpdated: the task's plan is now Plan.
type PlanUpdated struct{ Plan tools.Plan }

// FileEdited: the task changed a file from Before to After (Created: the
// file did not exist).
type FileEdited struct {
	Path, Before, After string
	Created             bool
}

// ApprovalAnswered: the user answered Request with Decision.
type ApprovalAnswered struct {
	Request  tools.ApprovalRequest
	Decision tools.Decision
}

// TaskEnded: the task's end, and what it taught: the lesson of a failure,
// or, for a success, what worked for each lesson the task was shown.
type TaskEnded struct {
	State, StopReason, Answer, Summary, Error string
	ModelCalls                                int
	ModelTime                                 time.Duration
	Lesson                                    *Learned // nil: no lesson
	Worked                                    []Worked
}

// Learned is the lesson a failed task leaves: what it was about (for the
// search), the lesson and its tags.
type Learned struct{ About, Text, Tags string }

// Worked is what a successful task did, linked to a lesson it was shown.
type Worked struct {
	LessonID int64
	Text     string
}

// Commit: everything recorded before is durable when Record returns (or
// ctx ends).
type Commit struct{}

func (TaskCreated) record()      {}
func (TaskState) record()        {}
func (MessageAdded) record()     {}
func (MessagesExcluded) record() {}
func (ToolCalled) record()       {}
func (PlanUpdated) record()      {}
func (FileEdited) record()       {}
func (ApprovalAnswered) record() {}
func (TaskEnded) record()        {}
func (Commit) record()           {}

// Exclusion reasons the store knows by name.
const (
	ExcludedTruncated = store.ExcludedTruncated
	ExcludedCompacted = store.ExcludedCompacted
)

// StoreWriter is what the journal writes to; *store.Store satisfies it.
// Its write methods only enqueue; Flush returns once everything enqueued
// before it is committed.
type StoreWriter interface {
	CreateTask(t store.Task) error
	SetTaskState(taskID, state string) error
	FinishTask(taskID string, e store.TaskEnd) error
	AppendMessage(taskID string, m store.Message) error
	ExcludeMessages(taskID, reason string, seqs ...int) error
	RecordToolCall(taskID string, c store.ToolCall) error
	RecordPlan(taskID string, p store.PlanUpdate) error
	RecordEdit(taskID string, e store.Edit) error
	RecordApproval(taskID string, a store.Approval) error
	AddLesson(l store.Lesson) error
	AddWorked(w store.Worked) error
	Flush(ctx context.Context) error
}

// Writer records tasks in the session store: the loop's Recorder.
type Writer struct{ st StoreWriter }

// NewWriter returns a writer to st; st must not be nil.
func NewWriter(st StoreWriter) *Writer { return &Writer{st: st} }

// Record stores r as task taskID's, in the store's form. Every record but
// Commit is only enqueued.
func (w *Writer) Record(ctx context.Context, taskID string, r Record) error {
	switch r := r.(type) {
	case TaskCreated:
		return w.st.CreateTask(store.Task{
			ID: taskID, SessionID: r.SessionID, Kind: r.Kind, Prompt: r.Prompt,
			EditorContext: r.EditorContext, State: r.State, FollowUpOf: r.FollowUp,
		})
	case TaskState:
		return w.st.SetTaskState(taskID, r.State)
	case MessageAdded:
		sm := storedMessage(r.Message)
		sm.Seq, sm.ModelCall, sm.Usage, sm.Duration = r.Seq, r.ModelCall, store.Usage(r.Usage), r.Duration
		sm.Excluded, sm.ExcludedReason = r.Excluded != "", r.Excluded
		return w.st.AppendMessage(taskID, sm)
	case MessagesExcluded:
		return w.st.ExcludeMessages(taskID, r.Reason, r.Seqs...)
	case ToolCalled:
		return w.st.RecordToolCall(taskID, toolCallRecord(r.CallID, r.Result))
	case PlanUpdated:
		u, err := planUpdate(r.Plan)
		if err != nil {
			return err
		}
		return w.st.RecordPlan(taskID, u)
	case FileEdited:
		return w.st.RecordEdit(taskID, store.Edit{Path: r.Path, Before: r.Before, After: r.After, Created: r.Created})
	case ApprovalAnswered:
		q := r.Request
		a := store.Approval{Tool: q.Tool, Decision: decisionName(r.Decision), Summary: q.Summary, Command: q.Command, Path: q.Path}
		if r.Decision == tools.AllowAlways {
			a.Prefix = q.Command
		}
		return w.st.RecordApproval(taskID, a)
	case TaskEnded:
		// Each write is enqueued even when one before it failed; the
		// first error is returned.
		err := w.st.FinishTask(taskID, store.TaskEnd{
			State: r.State, StopReason: r.StopReason, Answer: r.Answer, Summary: r.Summary, Error: r.Error,
			ModelCalls: r.ModelCalls, ModelTime: r.ModelTime,
		})
		if l := r.Lesson; l != nil {
			err = first(err, w.st.AddLesson(store.Lesson{TaskID: taskID, About: l.About, Text: l.Text, Tags: l.Tags}))
		}
		for _, k := range r.Worked {
			err = first(err, w.st.AddWorked(store.Worked{LessonID: k.LessonID, TaskID: taskID, Text: k.Text}))
		}
		return err
	case Commit:
		return w.st.Flush(ctx)
	}
	return fmt.Errorf("journal: no such record: %T", r) // only a nil Record: the set is closed
}

func first(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
