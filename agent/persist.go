package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	flightrec "github.com/agentls/agentls/agent/llm/recorder"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

// SessionStore is what the runner needs of the session store to keep its
// tasks durably as they run: *store.Store satisfies it. Write methods
// only enqueue; Flush returns once everything enqueued before it is
// committed. A nil SessionStore in Config means no persistence.
type SessionStore interface {
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
	SearchLessons(ctx context.Context, about string, limit int) ([]store.Lesson, error)
	LoadTask(ctx context.Context, id string) (*store.TaskRecord, error)
	TaskFiles(ctx context.Context, taskID string) ([]store.FileChange, error)
	Interrupted(ctx context.Context) ([]store.Task, error)
	Flush(ctx context.Context) error
}

// Exclusion reasons the loop writes besides store.ExcludedTruncated and
// store.ExcludedCompacted.
const (
	// excludedRepaired marks messages replaced by a repaired copy
	// when the repair changed more than the tail of the history.
	excludedRepaired = "repaired"
	// excludedValidator marks the validator's answer: a model call of the
	// task kept for the record and the totals, never part of the history.
	excludedValidator = "validator"
)

// flushTimeout bounds the flush at a task's end, which must not depend on
// the task's (possibly cancelled) context.
const flushTimeout = 10 * time.Second

// createTask records a new task in the store.
func (t *Task) createTask() {
	if t.st == nil {
		return
	}
	var ec json.RawMessage
	if b, err := json.Marshal(t.spec.Context); err == nil && string(b) != "{}" {
		ec = b
	}
	t.storeErr(t.st.CreateTask(store.Task{
		ID: t.id, SessionID: t.sessionID, Kind: string(t.spec.Kind), Prompt: t.spec.Prompt,
		EditorContext: ec, State: string(StateQueued), FollowUpOf: t.spec.FollowUp,
	}))
}

// storeErr keeps the first error of the session store for the task's notes.
func (t *Task) storeErr(err error) {
	if err == nil {
		return
	}
	t.mu.Lock()
	if t.persistErr == nil {
		t.persistErr = err
	}
	t.mu.Unlock()
}

// msgMeta is what the store keeps about a message besides its content.
type msgMeta struct {
	modelCall bool
	usage     llm.Usage
	duration  time.Duration
	excluded  string // exclusion reason; "" for a message of the history
}

// storeMsg records m as the task's next message and returns its Seq, or -1
// without a store.
func (x *run) storeMsg(m llm.Message, meta msgMeta) int {
	if x.t.st == nil {
		return -1
	}
	seq := x.seq
	x.seq++
	sm := journal.StoredMessage(m)
	sm.Content, sm.Reasoning = x.bound(sm.Content), x.bound(sm.Reasoning)
	for i := range sm.ToolCalls {
		// Arguments stay a JSON object, as a resumed history sends them.
		if a := sm.ToolCalls[i].Arguments; x.bound(a) != a {
			sm.ToolCalls[i].Arguments = fmt.Sprintf(`{"agentls_not_stored_bytes":%d}`, len(a))
		}
	}
	sm.Seq, sm.ModelCall, sm.Usage, sm.Duration = seq, meta.modelCall, store.Usage(meta.usage), meta.duration
	sm.Excluded, sm.ExcludedReason = meta.excluded != "", meta.excluded
	x.t.storeErr(x.t.st.AppendMessage(x.t.id, sm))
	return seq
}

// appendMsg appends m to the history and records it. stored, when set, is
// the message as the store keeps it (e.g. with its reasoning).
func (x *run) appendMsg(m llm.Message, meta msgMeta, stored *llm.Message) {
	sm := m
	if stored != nil {
		sm = *stored
	}
	seq := x.storeMsg(sm, meta)
	x.t.mu.Lock()
	x.t.history = append(x.t.history, m)
	x.t.mu.Unlock()
	x.hseq = append(x.hseq, seq)
}

// replaceHistory makes msgs the history (after repair or compaction) and
// keeps the store in step: when msgs only adds messages at the end of the
// old history (the usual repair: synthetic results for a dangling call),
// those are appended; otherwise every stored message of the old history is
// excluded with reason and msgs is appended whole, so that the stored
// context is always exactly the history.
func (x *run) replaceHistory(msgs []llm.Message, reason string) {
	x.t.mu.Lock()
	old := x.t.history
	x.t.history = msgs
	x.t.mu.Unlock()
	if x.t.st == nil {
		return
	}
	if len(msgs) >= len(old) && sameMessages(old, msgs[:len(old)]) {
		for _, m := range msgs[len(old):] {
			x.hseq = append(x.hseq, x.storeMsg(m, msgMeta{}))
		}
		return
	}
	var drop []int
	for _, s := range x.hseq {
		if s >= 0 {
			drop = append(drop, s)
		}
	}
	x.t.storeErr(x.t.st.ExcludeMessages(x.t.id, reason, drop...))
	x.hseq = x.hseq[:0]
	for _, m := range msgs {
		x.hseq = append(x.hseq, x.storeMsg(m, msgMeta{}))
	}
}

// sameMessages reports whether a and b hold the same messages.
func sameMessages(a, b []llm.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Role != y.Role || x.Content != y.Content || x.ToolCallID != y.ToolCallID || x.Name != y.Name ||
			len(x.ToolCalls) != len(y.ToolCalls) {
			return false
		}
		for j := range x.ToolCalls {
			if x.ToolCalls[j].ID != y.ToolCalls[j].ID || x.ToolCalls[j].Name != y.ToolCalls[j].Name ||
				x.ToolCalls[j].Arguments != y.ToolCalls[j].Arguments {
				return false
			}
		}
	}
	return true
}

// flush commits what the task wrote so far: after a model response is
// recorded and before its tool calls run, and at the task's end, so a crash
// loses at most the message in flight.
func (x *run) flush(ctx context.Context) {
	if x.t.st == nil {
		return
	}
	if ctx.Err() != nil {
		// Writes already enqueued still commit; the end of the task flushes.
		return
	}
	x.t.storeErr(x.t.st.Flush(ctx))
}

// finishStore records the task's end and lesson, and waits until the store
// has committed everything the task wrote.
func (x *run) finishStore(res *Result) {
	st := x.t.st
	if st == nil {
		return
	}
	x.t.storeErr(st.FinishTask(x.t.id, store.TaskEnd{
		State: string(res.Status), StopReason: string(res.StopReason), Answer: res.Answer,
		Summary: clip(firstLine(res.Answer, 300), 200), Error: res.Error,
		ModelCalls: res.ModelCalls, ModelTime: res.ModelTime,
	}))
	if res.Status == StateFailed && teaches(res.StopReason) {
		x.t.storeErr(st.AddLesson(x.lessonOf(res)))
	}
	if res.Status == StateCompleted {
		// What worked, for the lessons of the failed tasks this one was shown.
		text := workedOf(res)
		for _, l := range x.lessons {
			x.t.storeErr(st.AddWorked(store.Worked{LessonID: l.ID, TaskID: x.t.id, Text: text}))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	x.t.storeErr(st.Flush(ctx))
}

// teaches reports whether a task that failed for reason holds a lesson about
// its subject. A model service that refused the request (a bad key, an
// unknown model, a quota) or a tool's infrastructure failure says nothing
// about the work, and would only crowd out the lessons that do.
func teaches(reason StopReason) bool {
	switch reason {
	case StopModelError, StopToolError, StopCancelled:
		return false
	}
	return true
}

// recordToolCall records a finished call.
func (x *run) recordToolCall(c llm.ToolCall, res tools.Result) {
	if x.t.st == nil {
		return
	}
	// Call IDs repeat across turns when a server sends none (the client
	// numbers each response's calls from call_0) or reuses them; the store
	// keeps one row per call ID, so a repeat gets a suffix and every call
	// is counted.
	id := c.ID
	if x.callIDs == nil {
		x.callIDs = map[string]int{}
	}
	if n := x.callIDs[c.ID]; n > 0 {
		id = fmt.Sprintf("%s#%d", c.ID, n+1)
	}
	x.callIDs[c.ID]++
	rec := journal.ToolCallRecord(id, res)
	rec.Summary = x.bound(rec.Summary)
	if len(rec.Args) > 0 {
		if a := x.bound(string(rec.Args)); a != string(rec.Args) {
			rec.Args, _ = json.Marshal(a) // cut: no longer a JSON object, kept as a string
		}
	}
	x.t.storeErr(x.t.st.RecordToolCall(x.t.id, rec))
}

// storedHead is how much of a text the store keeps once the task's budget
// (Config.MaxStoredBytes) is spent.
const storedHead = 512

// bound is s as the store keeps it: whole while the task's store budget
// lasts, then cut to its head with a marker. Each call spends the budget.
func (x *run) bound(s string) string {
	left := x.cfg.MaxStoredBytes - x.storedBytes
	if len(s) <= left || len(s) <= storedHead {
		x.storedBytes += len(s)
		return s
	}
	keep := max(left, storedHead)
	if len(s)-keep < storedHead { // the marker would not save much
		x.storedBytes += len(s)
		return s
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	x.storedBytes += keep
	return s[:keep] + fmt.Sprintf("\n[agentls: %d more bytes not stored: the task's store budget of %d bytes is spent]", len(s)-keep, x.cfg.MaxStoredBytes)
}

// recordPlan records a plan update.
func (x *run) recordPlan(p tools.Plan) {
	if x.t.st == nil {
		return
	}
	u, err := journal.PlanUpdate(p)
	if err != nil {
		x.t.storeErr(err)
		return
	}
	x.t.storeErr(x.t.st.RecordPlan(x.t.id, u))
}

// recordEdit records a change the task applied to a file.
func (t *Task) recordEdit(path, before, after string, created bool) {
	if t.st == nil {
		return
	}
	t.storeErr(t.st.RecordEdit(t.id, store.Edit{Path: path, Before: before, After: after, Created: created}))
}

// recordApproval records the user's answer to an approval request.
func (t *Task) recordApproval(req tools.ApprovalRequest, d tools.Decision) {
	if t.st == nil {
		return
	}
	a := store.Approval{Tool: req.Tool, Decision: journal.DecisionName(d), Summary: req.Summary, Command: req.Command, Path: req.Path}
	if d == tools.AllowAlways {
		a.Prefix = req.Command
	}
	t.storeErr(t.st.RecordApproval(t.id, a))
}

// flight is a task's flight recorder: its model exchanges appended to
// <recordings>/<task ID>.jsonl, opened at the first call. A task
// resumed after a restart appends to the same file.
func (x *run) flight() llm.Recorder {
	if x.rec != nil || x.recOff {
		if x.rec == nil {
			return nil
		}
		return x.rec
	}
	dir := x.cfg.Recordings
	if dir == "" {
		if x.cfg.NoRecord || x.cfg.Root == "" {
			x.recOff = true
			return nil
		}
		// Only inside a workspace that exists: never create one.
		if fi, err := os.Stat(x.cfg.Root); err != nil || !fi.IsDir() {
			x.recOff = true
			return nil
		}
		dir = filepath.Join(x.cfg.Root, ".agentls", "recordings")
	} else if x.cfg.NoRecord {
		x.recOff = true
		return nil
	}
	var secrets []string
	if x.cfg.Secrets != nil {
		secrets = x.cfg.Secrets()
	}
	r, err := flightrec.Open(dir, x.t.id, flightrec.Options{Secrets: secrets})
	if err != nil {
		x.recOff = true
		x.notes = append(x.notes, fmt.Sprintf("flight recorder off: %v", err))
		return nil
	}
	x.rec = r
	return r
}

// closeFlight closes the task's recording.
func (x *run) closeFlight() {
	if x.rec != nil {
		_ = x.rec.Close()
		x.rec = nil
	}
}
