package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentls/agentls/agent/redact"
)

// The write methods below only enqueue; they return an error only when the
// store is closed. A write that fails in the database (say, a message for a
// task never created) is reported, named, by the next Flush or Close.
// Times left zero are set to the time of the call.

func (s *Store) now(t time.Time) time.Time {
	if t.IsZero() {
		return s.opts.Now()
	}
	return t
}

// CreateSession records a session; creating one that exists updates its title.
func (s *Store) CreateSession(sess Session) error {
	at := s.now(sess.CreatedAt)
	return s.enqueue("create session "+sess.ID, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions(id, title, created_at, updated_at) VALUES(?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET title = excluded.title, updated_at = excluded.updated_at`,
			sess.ID, sess.Title, ms(at), ms(at))
		return err
	})
}

// redact hides the configured secrets in text about to be written.
func (s *Store) redact(text string) string {
	if s.opts.Secrets == nil || text == "" {
		return text
	}
	return redact.New(s.opts.Secrets()...).String(text)
}

// CreateTask records a new task in state t.State (default "queued"). Its
// session is created if it does not exist. Creating a task whose ID exists
// is ignored, so a replayed create on resume does nothing.
func (s *Store) CreateTask(t Task) error {
	at := s.now(t.CreatedAt)
	if t.State == "" {
		t.State = "queued"
	}
	if t.SessionID == "" {
		t.SessionID = t.ID
	}
	ec := string(t.EditorContext)
	if ec == "" {
		ec = "null"
	}
	var follow any
	if t.FollowUpOf != "" {
		follow = t.FollowUpOf
	}
	return s.enqueue("create task "+t.ID, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions(id, created_at, updated_at) VALUES(?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at`, t.SessionID, ms(at), ms(at)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tasks(id, session_id, kind, prompt, editor_context, state,
			follow_up_of, created_at, updated_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
			t.ID, t.SessionID, t.Kind, s.redact(t.Prompt), s.redact(ec), t.State, follow, ms(at), ms(at))
		return err
	})
}

// SetTaskState records a state change of a live task. Use FinishTask for the
// terminal states.
func (s *Store) SetTaskState(taskID, state string) error {
	at := s.opts.Now()
	return s.enqueue("set state of task "+taskID, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, `UPDATE tasks SET state = ?, updated_at = ? WHERE id = ?`, state, ms(at), taskID)
	})
}

// MarkUndone records that the edits of a task were undone at at.
func (s *Store) MarkUndone(taskID string, at time.Time) error {
	at = s.now(at)
	return s.enqueue("mark task "+taskID+" undone", func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, `UPDATE tasks SET undone_at = ?, updated_at = ? WHERE id = ?`, ms(at), ms(at), taskID)
	})
}

// TaskEnd is how a task ended.
type TaskEnd struct {
	State      string // completed, failed or cancelled
	StopReason string
	Answer     string
	Summary    string
	Error      string
	At         time.Time
	// ModelCalls and ModelTime are the task's own totals, failed calls
	// included (a call that never answered has no message row); the stored
	// figures are raised to them, never lowered. Zero leaves them as stored.
	ModelCalls int
	ModelTime  time.Duration
}

// FinishTask records the end of a task.
func (s *Store) FinishTask(taskID string, e TaskEnd) error {
	at := s.now(e.At)
	if !Terminal(e.State) {
		return fmt.Errorf("finish task %s: %q is not a terminal state", taskID, e.State)
	}
	return s.enqueue("finish task "+taskID, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, `UPDATE tasks SET state = ?, stop_reason = ?, answer = ?, summary = ?, error = ?,
			llm_calls = MAX(llm_calls, ?), model_us = MAX(model_us, ?), updated_at = ?, ended_at = ? WHERE id = ?`,
			e.State, e.StopReason, s.redact(e.Answer), s.redact(e.Summary), s.redact(e.Error), e.ModelCalls, e.ModelTime.Microseconds(), ms(at), ms(at), taskID)
	})
}

// AppendMessage records message m.Seq of a task's history. A message whose
// (task, Seq) is already stored is ignored (a replay on resume), and then
// does not count toward the task's totals again.
func (s *Store) AppendMessage(taskID string, m Message) error {
	at := s.now(m.CreatedAt)
	var calls any
	if len(m.ToolCalls) > 0 {
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return fmt.Errorf("append message %s/%d: %w", taskID, m.Seq, err)
		}
		calls = s.redact(string(b))
	}
	images := keptImages(m.Images)
	return s.enqueue(fmt.Sprintf("append message %s/%d", taskID, m.Seq), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO messages(task_id, seq, role, content, reasoning, tool_calls,
			tool_call_id, name, model_call, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
			duration_us, excluded, excluded_reason, created_at)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(task_id, seq) DO NOTHING`,
			taskID, m.Seq, m.Role, s.redact(m.Content), s.redact(m.Reasoning), calls, m.ToolCallID, m.Name, m.ModelCall,
			m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CachedTokens, m.Usage.ReasoningTokens,
			m.Duration.Microseconds(), m.Excluded, m.ExcludedReason, ms(at))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		for i, img := range images {
			// Data, not text: stored as bytes, never through the redactor.
			var data any
			if img.Data != nil {
				data = img.Data
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO message_images(task_id, seq, idx, mime_type, size, data)
				VALUES(?, ?, ?, ?, ?, ?)`, taskID, m.Seq, i, img.MIMEType, img.Size, data); err != nil {
				return err
			}
		}
		if !m.ModelCall {
			return nil
		}
		return execOne(ctx, tx, `UPDATE tasks SET llm_calls = llm_calls + 1, input_tokens = input_tokens + ?,
			output_tokens = output_tokens + ?, cached_tokens = cached_tokens + ?,
			reasoning_tokens = reasoning_tokens + ?, model_us = model_us + ?, updated_at = ? WHERE id = ?`,
			m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CachedTokens, m.Usage.ReasoningTokens,
			m.Duration.Microseconds(), ms(at), taskID)
	})
}

// keptImages is images as the store keeps them: in order, each with its
// data while the message's image bytes stay within MaxImageBytes, the
// rest without (their type and size only). Size is the data's length when
// there is data.
func keptImages(images []Image) []Image {
	if len(images) == 0 {
		return nil
	}
	out := make([]Image, len(images))
	total := 0
	for i, img := range images {
		if img.Data != nil {
			img.Size = len(img.Data)
		}
		total += img.Size
		if total > MaxImageBytes {
			img.Data = nil
		}
		out[i] = img
	}
	return out
}

// ExcludeMessages flags stored messages of a task as excluded from the
// model's context (compaction), keeping them for the record.
func (s *Store) ExcludeMessages(taskID, reason string, seqs ...int) error {
	if len(seqs) == 0 {
		return nil
	}
	seqs = append([]int(nil), seqs...)
	return s.enqueue("exclude messages of task "+taskID, func(ctx context.Context, tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `UPDATE messages SET excluded = 1, excluded_reason = ? WHERE task_id = ? AND seq = ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, q := range seqs {
			if _, err := st.ExecContext(ctx, reason, taskID, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// RecordToolCall records one finished tool call and adds its duration to the
// task's tool time. A call ID already recorded for the task is ignored. Of a
// summary longer than summaryMax bytes, the head and the tail are kept.
func (s *Store) RecordToolCall(taskID string, c ToolCall) error {
	at := s.now(c.At)
	c.Summary = headTail(c.Summary, summaryMax)
	return s.enqueue(fmt.Sprintf("record tool call %s/%s", taskID, c.CallID), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO tool_calls(task_id, call_id, name, args, duration_us, is_error,
			summary, created_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(task_id, call_id) DO NOTHING`,
			taskID, c.CallID, c.Name, s.redact(string(c.Args)), c.Duration.Microseconds(), c.IsError, s.redact(c.Summary), ms(at))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return execOne(ctx, tx, `UPDATE tasks SET tool_us = tool_us + ?, updated_at = ? WHERE id = ?`,
			c.Duration.Microseconds(), ms(at), taskID)
	})
}

// RecordPlan records a new version of the task's plan (every update counts). p.Plan is stored as given; p.Seq is set by the store.
func (s *Store) RecordPlan(taskID string, p PlanUpdate) error {
	if !json.Valid(p.Plan) {
		return fmt.Errorf("record plan of task %s: the plan is not valid JSON", taskID)
	}
	at := s.now(p.At)
	plan := string(p.Plan)
	return s.enqueue("record plan of task "+taskID, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO plans(task_id, seq, plan, open_items, created_at)
			VALUES(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM plans WHERE task_id = ?), ?, ?, ?)`,
			taskID, taskID, plan, p.Open, ms(at))
		return err
	})
}

// RecordEdit records one change the task applied to a file, with the whole
// text before and after it. Record it once the edit is applied.
func (s *Store) RecordEdit(taskID string, e Edit) error {
	at := s.now(e.At)
	return s.enqueue("record edit of "+e.Path, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO edits(task_id, seq, path, text_before, text_after, created, deleted, created_at)
			VALUES(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM edits WHERE task_id = ?), ?, ?, ?, ?, ?, ?)`,
			taskID, taskID, e.Path, e.Before, e.After, e.Created, e.Deleted, ms(at))
		return err
	})
}

// RecordApproval records the user's answer to an approval request.
func (s *Store) RecordApproval(taskID string, a Approval) error {
	at := s.now(a.At)
	return s.enqueue("record approval for task "+taskID, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO approvals(task_id, tool, decision, summary, command, prefix, path, created_at)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?)`,
			taskID, a.Tool, a.Decision, s.redact(a.Summary), s.redact(a.Command), s.redact(a.Prefix), a.Path, ms(at))
		return err
	})
}

// AddLesson records what a failed task taught. TaskID may be empty.
func (s *Store) AddLesson(l Lesson) error {
	at := s.now(l.At)
	var task any
	if l.TaskID != "" {
		task = l.TaskID
	}
	return s.enqueue("add lesson", func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lessons(task_id, about, text, tags, created_at) VALUES(?, ?, ?, ?, ?)`,
			task, s.redact(l.About), s.redact(l.Text), l.Tags, ms(at))
		return err
	})
}

// AddWorked links what a successful task did to the lesson of an earlier
// failed one (w.LessonID). A lesson deleted meanwhile makes it a no-op.
func (s *Store) AddWorked(w Worked) error {
	at := s.now(w.At)
	var task any
	if w.TaskID != "" {
		task = w.TaskID
	}
	return s.enqueue("add what worked", func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lesson_worked(lesson_id, task_id, text, created_at)
			SELECT id, ?, ?, ? FROM lessons WHERE id = ?`,
			task, s.redact(w.Text), ms(at), w.LessonID)
		return err
	})
}

// execOne runs an update that must touch exactly one row.
func execOne(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("task: %w", ErrNotFound)
	}
	return nil
}

// usageOf is a helper for scanning.
func usageOf(in, out, cached, reasoning int) Usage {
	return Usage{InputTokens: in, OutputTokens: out, CachedTokens: cached, ReasoningTokens: reasoning}
}

// DeleteSession removes a session and everything recorded of it: its
// tasks with their messages, plans, tool calls, edits and approvals
// (ON DELETE CASCADE), and the lessons learnt from its tasks. Deleting a
// session that is not there is no error.
func (s *Store) DeleteSession(id string) error {
	return s.enqueue("delete session "+id, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM lessons WHERE task_id IN (SELECT id FROM tasks WHERE session_id = ?)`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		return err
	})
}
