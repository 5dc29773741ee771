package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Terminal task states. Any other state (queued, planning, executing,
// validating, ...) is live; a live task found in the database after a
// restart was interrupted.
const (
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
)

// Terminal reports whether state is one a task ends in.
func Terminal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCancelled
}

// Session groups the tasks of one conversation; a follow-up task sees
// the previous tasks of its session, across restarts.
type Session struct {
	ID        string
	Title     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Task is one row of the tasks table: what was asked, where it stands, and
// its totals.
type Task struct {
	ID            string
	SessionID     string
	Kind          string          // "ask", "edit", ... as the agent names them
	Prompt        string          // what the user asked
	EditorContext json.RawMessage // JSON of the editor context (file, range, diagnostics), or nil
	State         string
	StopReason    string
	FollowUpOf    string // ID of the task this one follows up, or ""
	Answer        string // the final answer shown to the user
	Summary       string // a short summary for lists and follow-ups
	Error         string // what failed, for failed tasks
	CreatedAt     time.Time
	UpdatedAt     time.Time
	EndedAt       time.Time // zero while the task is live
	UndoneAt      time.Time // when the task's edits were undone; zero if never

	// Totals, kept current as messages and tool calls are recorded.
	LLMCalls  int
	Usage     Usage
	ModelTime time.Duration
	ToolTime  time.Duration
}

// Usage counts the tokens of one model call, or, summed, of a task. Its
// fields (and JSON names) are those of the model client's usage, so the
// agent converts one to the other with a plain type conversion.
type Usage struct {
	InputTokens     int `json:"inputTokens"`
	OutputTokens    int `json:"outputTokens"`
	CachedTokens    int `json:"cachedTokens"`
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
}

// Message is one entry of a task's history as stored.
type Message struct {
	// Seq is the message's position in the task's history log, from 0. The
	// pair (task, Seq) is the key: appending an existing pair is ignored, so
	// a write replayed on resume is not duplicated.
	Seq int

	Role       string // "system", "user", "assistant" or "tool"
	Content    string
	Reasoning  string        // the model's reasoning text, kept for reports
	ToolCalls  []CallRequest // the tool calls an assistant message asks for
	ToolCallID string        // for a tool message: the call it answers
	Name       string        // for a tool message: the tool's name

	// ModelCall marks the response of one model call: it adds one to the
	// task's LLM calls and its Usage and Duration to the task's totals.
	// Leave it false for copies of earlier messages (e.g. after compaction).
	ModelCall bool
	Usage     Usage
	Duration  time.Duration // of the model call, for ModelCall messages
	// Excluded marks a message kept for the record but not sent to the
	// model: a response cut at max_tokens, turns replaced by a
	// compaction summary. ExcludedReason says which.
	Excluded       bool
	ExcludedReason string
	CreatedAt      time.Time

	// Images are the pictures of a user message (a prompt from an ACP
	// client), in order: data, not text. The store keeps them as given,
	// neither redacted nor cut, up to MaxImageBytes a message.
	Images []Image
}

// Image is one picture of a message. Data is nil when the store did not
// keep it: its message's images passed MaxImageBytes (MIMEType and Size
// say what it was).
type Image struct {
	MIMEType string
	Size     int    // bytes of the image
	Data     []byte // the image's bytes; nil when not kept
}

// MaxImageBytes bounds the image bytes the store keeps of one message:
// 6 MiB, what the 8 MiB of base64 image data an ACP prompt may carry
// decodes to. The images of a message are kept in order while their
// bytes together stay within it; the ones after are recorded without
// their data.
const MaxImageBytes = 6 << 20

// CallRequest is one tool call a model message asks for. A message's calls
// are stored as a JSON array of these; the JSON names are part of the
// database format.
type CallRequest struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // raw JSON text as the model wrote it
	// Incomplete marks a call of a response that was cut or broken: it was
	// never executed.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Exclusion reasons the agent uses.
const (
	ExcludedTruncated = "truncated"
	ExcludedCompacted = "compacted"
)

// ToolCall is the record of one tool call: name, arguments, duration, error
// flag and a summary of its result.
type ToolCall struct {
	CallID   string
	Name     string
	Args     json.RawMessage
	Duration time.Duration
	IsError  bool
	// Summary is the result's text; RecordToolCall keeps its head and its
	// tail when it is longer than summaryMax. The full text is in the
	// tool message of the history.
	Summary string
	At      time.Time
}

// summaryMax bounds the result summary kept for a tool call.
const summaryMax = 2000

// headTail shortens s to about max bytes, keeping its start and its end.
func headTail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const marker = "\n[... %d bytes cut ...]\n"
	h := max / 2
	t := max - h
	// Stay on UTF-8 boundaries.
	for h > 0 && !isRuneStart(s[h]) {
		h--
	}
	ts := len(s) - t
	for ts < len(s) && !isRuneStart(s[ts]) {
		ts++
	}
	return s[:h] + fmt.Sprintf(marker, ts-h) + s[ts:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// PlanUpdate is one version of a task's plan. The store keeps the plan as
// the JSON text the agent gives it, checked to be JSON and not interpreted.
type PlanUpdate struct {
	Seq  int             // set by the store: 1 for the task's first update
	Plan json.RawMessage // the plan as JSON
	Open int             // how many of its items are neither done nor skipped
	At   time.Time
}

// Edit is one change the task applied to one file, with the whole text
// before and after it, so the task can be undone without git.
type Edit struct {
	Seq     int    // set by the store: 1 for the task's first edit
	Path    string // workspace-relative
	Before  string
	After   string
	Created bool // the file did not exist before this edit
	Deleted bool // the edit removed the file (After is empty)
	At      time.Time
}

// Approval is one answer the user gave to an approval request.
type Approval struct {
	Tool     string
	Decision string // one of the Decision constants
	Summary  string
	Command  string
	Prefix   string // the command prefix remembered by DecisionAllowAlways
	Path     string
	At       time.Time
}

// The stored names of approval decisions.
const (
	DecisionDeny        = "deny"
	DecisionAllowOnce   = "allow_once"   // this call only
	DecisionAllowTask   = "allow_task"   // every similar call of the task
	DecisionAllowAlways = "allow_always" // remembered for the workspace
)

// Lesson is what a failed task taught, found again by what a new task
// is about.
type Lesson struct {
	ID     int64
	TaskID string // the task it came from, or ""
	About  string // what the task was about: its prompt, the files, the tools involved
	Text   string // what was learned, as a sentence the model can use
	Tags   string // space-separated keywords
	At     time.Time
	// Rank is the bm25 score of a search hit (lower is better); 0 otherwise.
	Rank float64
	// Worked is what the latest later task on the same subject did to
	// succeed, and WorkedTaskID that task; "" when none has yet (search
	// hits only).
	Worked       string
	WorkedTaskID string
}

// Worked is what a task that succeeded did, linked to the lesson of an
// earlier failed task on the same subject.
type Worked struct {
	LessonID int64
	TaskID   string // the task that succeeded, or ""
	Text     string
	At       time.Time
}

// TaskRecord is everything stored about one task, for resume and reports.
type TaskRecord struct {
	Task
	Messages []Message // in Seq order, excluded ones included and flagged
	// Plan is the JSON of the task's last plan update, nil when it has none.
	Plan      json.RawMessage
	PlanSeq   int // number of plan updates
	Edits     []Edit
	ToolCalls []ToolCall
	Approvals []Approval
	// NextSeq is the Seq for the next message appended on resume.
	NextSeq int
}

// Context returns the messages the model should see, in order: those not
// excluded.
func (r *TaskRecord) Context() []Message {
	out := make([]Message, 0, len(r.Messages))
	for _, m := range r.Messages {
		if !m.Excluded {
			out = append(out, m)
		}
	}
	return out
}
