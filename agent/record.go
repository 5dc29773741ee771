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
	"github.com/agentls/agentls/tools"
)

// Recorder is where the loop writes a task down as it runs: its creation,
// states, messages, tool calls, plans, edits, approvals and end, each a
// journal.Record; *journal.Writer records them in the session store. All
// but journal.Commit may only enqueue; Commit returns once everything
// recorded before it is durable. A nil Recorder in Config means nothing is
// recorded. What was recorded is read back by the journal (resume, undo,
// lessons, follow-ups of earlier runs), never by the loop.
type Recorder interface {
	Record(ctx context.Context, taskID string, r journal.Record) error
}

// Exclusion reasons the loop writes besides journal.ExcludedTruncated and
// journal.ExcludedCompacted.
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

// createTask records a new task.
func (t *Task) createTask() {
	var ec json.RawMessage
	if b, err := json.Marshal(t.spec.Context); err == nil && string(b) != "{}" {
		ec = b
	}
	t.record(journal.TaskCreated{
		SessionID: t.sessionID, Kind: string(t.spec.Kind), Prompt: t.spec.Prompt,
		EditorContext: ec, State: string(StateQueued), FollowUp: t.spec.FollowUp,
	})
}

// record writes r down as the task's, when the task is recorded; an
// error is kept for the task's notes. Only journal.Commit waits, under ctx.
func (t *Task) record(r journal.Record) { t.recordCtx(context.Background(), r) }

func (t *Task) recordCtx(ctx context.Context, r journal.Record) {
	if t.rec == nil {
		return
	}
	t.storeErr(t.rec.Record(ctx, t.id, r))
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
// when the task is not recorded.
func (x *run) storeMsg(m llm.Message, meta msgMeta) int {
	if x.t.rec == nil {
		return -1
	}
	seq := x.seq
	x.seq++
	m.Content, m.Reasoning = x.bound(m.Content), x.bound(m.Reasoning)
	if len(m.ToolCalls) > 0 {
		m.ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...) // the history's stay whole
	}
	for i := range m.ToolCalls {
		// Arguments stay a JSON object, as a resumed history sends them.
		if a := m.ToolCalls[i].Arguments; x.bound(a) != a {
			m.ToolCalls[i].Arguments = fmt.Sprintf(`{"agentls_not_stored_bytes":%d}`, len(a))
		}
	}
	x.t.record(journal.MessageAdded{Seq: seq, Message: m, ModelCall: meta.modelCall, Usage: meta.usage, Duration: meta.duration, Excluded: meta.excluded})
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
	if x.t.rec == nil {
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
	x.t.record(journal.MessagesExcluded{Reason: reason, Seqs: drop})
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
	if ctx.Err() != nil {
		// Writes already enqueued still commit; the end of the task flushes.
		return
	}
	x.t.recordCtx(ctx, journal.Commit{})
}

// finishStore records the task's end and what it taught, and waits until
// everything the task recorded is durable.
func (x *run) finishStore(res *Result) {
	if x.t.rec == nil {
		return
	}
	end := journal.TaskEnded{
		State: string(res.Status), StopReason: string(res.StopReason), Answer: res.Answer,
		Summary: clip(firstLine(res.Answer, 300), 200), Error: res.Error,
		ModelCalls: res.ModelCalls, ModelTime: res.ModelTime,
	}
	if res.Status == StateFailed && teaches(res.StopReason) {
		end.Lesson = x.lessonOf(res)
	}
	if res.Status == StateCompleted {
		// What worked, for the lessons of the failed tasks this one was shown.
		text := workedOf(res)
		for _, l := range x.lessons {
			end.Worked = append(end.Worked, journal.Worked{LessonID: l.ID, Text: text})
		}
	}
	x.t.record(end)
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	x.t.recordCtx(ctx, journal.Commit{})
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
	if x.t.rec == nil {
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
	res.Text = x.bound(res.Text)
	if len(res.Args) > 0 {
		if a := x.bound(string(res.Args)); a != string(res.Args) {
			res.Args, _ = json.Marshal(a) // cut: no longer a JSON object, kept as a string
		}
	}
	x.t.record(journal.ToolCalled{CallID: id, Result: res})
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
func (x *run) recordPlan(p tools.Plan) { x.t.record(journal.PlanUpdated{Plan: p}) }

// recordEdit records a change the task applied to a file.
func (t *Task) recordEdit(path, before, after string, created bool) {
	t.record(journal.FileEdited{Path: path, Before: before, After: after, Created: created})
}

// recordApproval records the user's answer to an approval request.
func (t *Task) recordApproval(req tools.ApprovalRequest, d tools.Decision) {
	t.record(journal.ApprovalAnswered{Request: req, Decision: d})
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
	dir, inRoot := x.cfg.Recordings, false
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
		dir, inRoot = filepath.Join(x.cfg.Root, ".agentls", "recordings"), true
	} else if x.cfg.NoRecord {
		x.recOff = true
		return nil
	}
	var secrets []string
	if x.cfg.Secrets != nil {
		secrets = x.cfg.Secrets()
	}
	var r *flightrec.Recorder
	var err error
	if inRoot {
		// No link below the workspace root is followed: a repository's
		// .agentls or .agentls/recordings that is a link is refused.
		r, err = flightrec.OpenIn(x.cfg.Root, ".agentls/recordings", x.t.id, flightrec.Options{Secrets: secrets})
	} else {
		r, err = flightrec.Open(dir, x.t.id, flightrec.Options{Secrets: secrets})
	}
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
