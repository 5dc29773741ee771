package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

// StoredSession is one session of the store, as a face lists it.
type StoredSession struct {
	ID string
	// Title is the session's title, else the first line of its first
	// task's prompt (at most 80 runes), else "".
	Title     string
	UpdatedAt time.Time
}

// Sessions lists the workspace's stored sessions (at most limit, default
// 100), most recently active first, whichever face started them.
func (h *Host) Sessions(ctx context.Context, limit int) ([]StoredSession, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	sessions, err := st.Sessions(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]StoredSession, 0, len(sessions))
	for _, ss := range sessions {
		title := ss.Title
		if title == "" {
			if tasks, err := st.SessionTasks(ctx, ss.ID); err == nil && len(tasks) > 0 {
				title = FirstLine(tasks[0].Prompt, 80)
			}
		}
		out = append(out, StoredSession{ID: ss.ID, Title: title, UpdatedAt: ss.UpdatedAt})
	}
	return out, nil
}

// ReplayTask is what a stored task recorded, for a face that shows it
// again (an ACP session/load).
type ReplayTask struct {
	ID     string
	Prompt string
	State  string
	// Ended: the task completed, failed or was cancelled; otherwise it was
	// interrupted.
	Ended  bool
	Answer string      // as stored; the face makes it inert
	Plan   *tools.Plan // its last plan, nil when it had none or it is unreadable
	// ToolCalls and Files are empty when the task's record is unreadable.
	ToolCalls []ReplayCall
	Files     []ReplayFile // what it did to each file, in order of first edit
	// Images are the pictures attached to the prompt, in order; empty
	// when it had none or the task's record is unreadable.
	Images []ReplayImage
}

// ReplayCall is one tool call of a stored task.
type ReplayCall struct {
	Name    string
	Args    json.RawMessage
	IsError bool
	Summary string // the head and tail of the result's text
}

// ReplayImage is one picture of a stored prompt.
type ReplayImage struct {
	MIMEType string
	Data     string // base64; "" when the store did not keep it (Note says so)
	Note     string
}

// ReplayFile is what a stored task did to one file.
type ReplayFile struct {
	Path    string // workspace-relative
	Before  string // before the task's first edit
	After   string // after its last edit
	Created bool   // the file did not exist before the task
}

// Replay returns the tasks of stored session sessionID, oldest first; none
// when the store does not know it.
func (h *Host) Replay(ctx context.Context, sessionID string) ([]ReplayTask, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	tasks, err := st.SessionTasks(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]ReplayTask, 0, len(tasks))
	for _, t := range tasks {
		rt := ReplayTask{ID: t.ID, Prompt: t.Prompt, State: t.State, Ended: store.Terminal(t.State), Answer: t.Answer}
		if rec, err := st.LoadTask(ctx, t.ID); err == nil {
			if plan, err := journal.StoredPlan(rec); err == nil && plan != nil {
				rt.Plan = plan
			}
			rt.Images = promptImages(rec.Messages)
			for _, tc := range rec.ToolCalls {
				rt.ToolCalls = append(rt.ToolCalls, ReplayCall{Name: tc.Name, Args: tc.Args, IsError: tc.IsError, Summary: tc.Summary})
			}
			for _, fc := range store.FileChanges(rec.Edits) {
				rt.Files = append(rt.Files, ReplayFile{Path: fc.Path, Before: fc.Before, After: fc.After, Created: fc.Created})
			}
		}
		out = append(out, rt)
	}
	return out, nil
}

// promptImages are the images of a task's prompt: those of its first
// user message that has any (a compacted or repaired history stores
// copies of it later on).
func promptImages(msgs []store.Message) []ReplayImage {
	for _, m := range msgs {
		if m.Role != "user" || len(m.Images) == 0 {
			continue
		}
		out := make([]ReplayImage, 0, len(m.Images))
		for _, img := range m.Images {
			ri := ReplayImage{MIMEType: img.MIMEType, Data: journal.ImageData(img)}
			if ri.Data == "" {
				ri.Note = journal.ImageNote(img)
			}
			out = append(out, ri)
		}
		return out
	}
	return nil
}

// DeleteSession removes stored session id and all of its tasks from the
// session store, and waits until that is written.
func (h *Host) DeleteSession(ctx context.Context, id string) error {
	st, err := h.Store(ctx)
	if err != nil {
		return err
	}
	if err := st.DeleteSession(id); err != nil {
		return err
	}
	return st.Flush(ctx)
}
