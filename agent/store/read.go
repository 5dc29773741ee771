package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

const taskCols = `id, session_id, kind, prompt, editor_context, state, stop_reason, COALESCE(follow_up_of, ''),
	answer, summary, error, created_at, updated_at, COALESCE(ended_at, 0), llm_calls, input_tokens,
	output_tokens, cached_tokens, reasoning_tokens, model_us, tool_us, COALESCE(undone_at, 0)`

type scanner interface{ Scan(dest ...any) error }

func scanTask(sc scanner) (Task, error) {
	var t Task
	var ec string
	var created, updated, ended, modelUS, toolUS, undone int64
	var in, out, cached, reasoning int
	err := sc.Scan(&t.ID, &t.SessionID, &t.Kind, &t.Prompt, &ec, &t.State, &t.StopReason, &t.FollowUpOf,
		&t.Answer, &t.Summary, &t.Error, &created, &updated, &ended, &t.LLMCalls, &in, &out, &cached, &reasoning,
		&modelUS, &toolUS, &undone)
	if err != nil {
		return t, err
	}
	if ec != "" && ec != "null" {
		t.EditorContext = json.RawMessage(ec)
	}
	t.CreatedAt, t.UpdatedAt, t.EndedAt, t.UndoneAt = fromMS(created), fromMS(updated), fromMS(ended), fromMS(undone)
	t.Usage = usageOf(in, out, cached, reasoning)
	t.ModelTime = time.Duration(modelUS) * time.Microsecond
	t.ToolTime = time.Duration(toolUS) * time.Microsecond
	return t, nil
}

// Task returns one task's row.
func (s *Store) Task(ctx context.Context, id string) (Task, error) {
	db, err := s.reader(ctx)
	if err != nil {
		return Task{}, err
	}
	t, err := scanTask(db.QueryRowContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("task %s: %w", id, err)
	}
	return t, nil
}

// LoadTask returns everything stored about a task, for resume and reports:
// its messages in order (excluded ones flagged), its last plan, its edits,
// tool calls and approvals. All of it is read in one snapshot.
func (s *Store) LoadTask(ctx context.Context, id string) (*TaskRecord, error) {
	db, err := s.reader(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("load task %s: %w", id, err)
	}
	defer tx.Rollback()
	rec, err := loadTask(ctx, tx, id)
	if err != nil {
		return nil, fmt.Errorf("load task %s: %w", id, err)
	}
	return rec, nil
}

func loadTask(ctx context.Context, tx *sql.Tx, id string) (*TaskRecord, error) {
	t, err := scanTask(tx.QueryRowContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	rec := &TaskRecord{Task: t}

	if rec.Messages, err = queryMessages(ctx, tx, id); err != nil {
		return nil, err
	}
	if n := len(rec.Messages); n > 0 {
		rec.NextSeq = rec.Messages[n-1].Seq + 1
	}

	var planJSON string
	err = tx.QueryRowContext(ctx, `SELECT seq, plan FROM plans WHERE task_id = ? ORDER BY seq DESC LIMIT 1`, id).
		Scan(&rec.PlanSeq, &planJSON)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("plan: %w", err)
	case !json.Valid([]byte(planJSON)):
		return nil, fmt.Errorf("plan %d: not valid JSON", rec.PlanSeq)
	default:
		rec.Plan = json.RawMessage(planJSON)
	}

	if rec.Edits, err = queryEdits(ctx, tx, id); err != nil {
		return nil, err
	}

	rows, err := tx.QueryContext(ctx, `SELECT call_id, name, args, duration_us, is_error, summary, created_at
		FROM tool_calls WHERE task_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("tool calls: %w", err)
	}
	for rows.Next() {
		var c ToolCall
		var args string
		var us, at int64
		if err := rows.Scan(&c.CallID, &c.Name, &args, &us, &c.IsError, &c.Summary, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("tool calls: %w", err)
		}
		if args != "" {
			c.Args = json.RawMessage(args)
		}
		c.Duration = time.Duration(us) * time.Microsecond
		c.At = fromMS(at)
		rec.ToolCalls = append(rec.ToolCalls, c)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("tool calls: %w", err)
	}

	rows, err = tx.QueryContext(ctx, `SELECT tool, decision, summary, command, prefix, path, created_at
		FROM approvals WHERE task_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	for rows.Next() {
		var a Approval
		var at int64
		if err := rows.Scan(&a.Tool, &a.Decision, &a.Summary, &a.Command, &a.Prefix, &a.Path, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("approvals: %w", err)
		}
		a.At = fromMS(at)
		rec.Approvals = append(rec.Approvals, a)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	return rec, nil
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

func queryMessages(ctx context.Context, tx *sql.Tx, taskID string) ([]Message, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, role, content, reasoning, tool_calls, tool_call_id, name,
		model_call, input_tokens, output_tokens, cached_tokens, reasoning_tokens, duration_us, excluded,
		excluded_reason, created_at FROM messages WHERE task_id = ? ORDER BY seq`, taskID)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	var out []Message
	for rows.Next() {
		var m Message
		var calls sql.NullString
		var in, outT, cached, reasoning int
		var us, at int64
		if err := rows.Scan(&m.Seq, &m.Role, &m.Content, &m.Reasoning, &calls, &m.ToolCallID, &m.Name,
			&m.ModelCall, &in, &outT, &cached, &reasoning, &us, &m.Excluded, &m.ExcludedReason, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("messages: %w", err)
		}
		if calls.Valid && calls.String != "" {
			if err := json.Unmarshal([]byte(calls.String), &m.ToolCalls); err != nil {
				rows.Close()
				return nil, fmt.Errorf("message %d tool calls: %w", m.Seq, err)
			}
		}
		m.Usage = usageOf(in, outT, cached, reasoning)
		m.Duration = time.Duration(us) * time.Microsecond
		m.CreatedAt = fromMS(at)
		out = append(out, m)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	if err := attachImages(ctx, tx, taskID, out); err != nil {
		return nil, err
	}
	return out, nil
}

// attachImages reads the images of a task's messages into msgs (in Seq
// order).
func attachImages(ctx context.Context, tx *sql.Tx, taskID string, msgs []Message) error {
	rows, err := tx.QueryContext(ctx, `SELECT seq, mime_type, size, data FROM message_images
		WHERE task_id = ? ORDER BY seq, idx`, taskID)
	if err != nil {
		return fmt.Errorf("message images: %w", err)
	}
	bySeq := make(map[int]int, len(msgs))
	for i, m := range msgs {
		bySeq[m.Seq] = i
	}
	for rows.Next() {
		var seq int
		var img Image
		if err := rows.Scan(&seq, &img.MIMEType, &img.Size, &img.Data); err != nil {
			rows.Close()
			return fmt.Errorf("message images: %w", err)
		}
		if i, ok := bySeq[seq]; ok {
			msgs[i].Images = append(msgs[i].Images, img)
		}
	}
	if err := closeRows(rows); err != nil {
		return fmt.Errorf("message images: %w", err)
	}
	return nil
}

func queryEdits(ctx context.Context, tx *sql.Tx, taskID string) ([]Edit, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, path, text_before, text_after, created, deleted, created_at
		FROM edits WHERE task_id = ? ORDER BY seq`, taskID)
	if err != nil {
		return nil, fmt.Errorf("edits: %w", err)
	}
	var out []Edit
	for rows.Next() {
		var e Edit
		var at int64
		if err := rows.Scan(&e.Seq, &e.Path, &e.Before, &e.After, &e.Created, &e.Deleted, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("edits: %w", err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("edits: %w", err)
	}
	return out, nil
}

// TaskFilter selects tasks. Zero fields do not filter.
type TaskFilter struct {
	States    []string  // any of these states
	Live      bool      // only tasks in a non-terminal state
	Since     time.Time // created at or after
	SessionID string
	Limit     int // default 100
}

// Tasks lists tasks, newest first.
func (s *Store) Tasks(ctx context.Context, f TaskFilter) ([]Task, error) {
	db, err := s.reader(ctx)
	if err != nil {
		return nil, err
	}
	var where []string
	var args []any
	if len(f.States) > 0 {
		where = append(where, "state IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.States)), ",")+")")
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if f.Live {
		where = append(where, "state NOT IN (?, ?, ?)")
		args = append(args, StateCompleted, StateFailed, StateCancelled)
	}
	if !f.Since.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, ms(f.Since))
	}
	if f.SessionID != "" {
		where = append(where, "session_id = ?")
		args = append(args, f.SessionID)
	}
	q := `SELECT ` + taskCols + ` FROM tasks`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
	args = append(args, limit)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// Interrupted lists the tasks left in a live state, oldest first: after a
// crash or a kill, these are the tasks to offer for resume.
func (s *Store) Interrupted(ctx context.Context) ([]Task, error) {
	ts, err := s.Tasks(ctx, TaskFilter{Live: true, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(ts)-1; i < j; i, j = i+1, j-1 {
		ts[i], ts[j] = ts[j], ts[i]
	}
	return ts, nil
}

// SessionTasks lists the tasks of a session in the order they were created,
// so a follow-up can see what came before it, across restarts.
func (s *Store) SessionTasks(ctx context.Context, sessionID string) ([]Task, error) {
	ts, err := s.Tasks(ctx, TaskFilter{SessionID: sessionID, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(ts)-1; i < j; i, j = i+1, j-1 {
		ts[i], ts[j] = ts[j], ts[i]
	}
	return ts, nil
}

// Sessions lists sessions, most recently active first.
func (s *Store) Sessions(ctx context.Context, limit int) ([]Session, error) {
	db, err := s.reader(ctx)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.QueryContext(ctx, `SELECT id, title, created_at, updated_at FROM sessions
		ORDER BY updated_at DESC, rowid DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []Session
	for rows.Next() {
		var ss Session
		var c, u int64
		if err := rows.Scan(&ss.ID, &ss.Title, &c, &u); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		ss.CreatedAt, ss.UpdatedAt = fromMS(c), fromMS(u)
		out = append(out, ss)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// TaskFiles returns, for each file the task changed, the text before its
// first edit and after its last edit, in the order the files were first
// edited. Undo and resume ("what changed since the task's last step") use it.
func (s *Store) TaskFiles(ctx context.Context, taskID string) ([]FileChange, error) {
	db, err := s.reader(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("task files %s: %w", taskID, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks WHERE id = ?`, taskID).Scan(&n); err != nil {
		return nil, fmt.Errorf("task files %s: %w", taskID, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("task files %s: %w", taskID, ErrNotFound)
	}
	edits, err := queryEdits(ctx, tx, taskID)
	if err != nil {
		return nil, fmt.Errorf("task files %s: %w", taskID, err)
	}
	return FileChanges(edits), nil
}

// FileChanges folds a task's edits (in Seq order) into one change per file.
func FileChanges(edits []Edit) []FileChange {
	idx := map[string]int{}
	var out []FileChange
	for _, e := range edits {
		i, ok := idx[e.Path]
		if !ok {
			idx[e.Path] = len(out)
			out = append(out, FileChange{Path: e.Path, Before: e.Before, Created: e.Created})
			i = len(out) - 1
		}
		out[i].After = e.After
		out[i].Deleted = e.Deleted
		out[i].Edits++
	}
	return out
}
