package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentls/agentls/lsp/server"
	"strings"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/session"
)

// resumeCommand continues an interrupted task (same ID) through the same
// pipeline as agentls.run (progress, report, summary); the reply is
// agentls.run's.
func (s *Service) resumeCommand(ctx context.Context, inv *server.Invocation, a TaskIDArgs) (*RunReply, error) {
	spec, err := s.Host().Resumable(ctx, a.TaskID)
	switch {
	case errors.Is(err, session.ErrUnknownTask):
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: no stored task %q (agentls.tasks lists them)", CommandResume, a.TaskID)
	case errors.Is(err, session.ErrRunning):
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: task %s is running", CommandResume, a.TaskID)
	case errors.Is(err, session.ErrEnded):
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v", CommandResume, err)
	case err != nil:
		return nil, requestFailed("%s: %v", CommandResume, err)
	}
	return s.runTask(ctx, inv, spec)
}

// UndoReply is the reply of agentls.undo.
type UndoReply struct {
	TaskID      string             `json:"taskId"`
	Reverted    []string           `json:"reverted"`  // workspace-relative paths written back or deleted
	Unchanged   []string           `json:"unchanged"` // already as before the task
	NotReverted []session.UndoFile `json:"notReverted"`
	Summary     string             `json:"summary"`
}

// undoCommand reverts every edit of a task: the open files in one
// workspace/applyEdit with the closed ones (the same plan and applier as a
// task's edits); files changed since the task are
// merged around the change or left alone and reported with a diff.
func (s *Service) undoCommand(ctx context.Context, _ *server.Invocation, a TaskIDArgs) (UndoReply, error) {
	h := s.Host()
	ws, err := h.Workspace(ctx)
	if err != nil {
		return UndoReply{}, requestFailed("%s: %v", CommandUndo, err)
	}
	rep, err := h.Undo(ctx, a.TaskID, &Editor{svc: s, ws: ws})
	if errors.Is(err, session.ErrUnknownTask) || errors.Is(err, session.ErrRunning) {
		return UndoReply{}, hostError(CommandUndo, err)
	}
	if err != nil {
		s.srv.ShowMessage(ctx, protocol.MessageTypeError, "agentls: "+err.Error())
		return UndoReply{}, requestFailed("%s: %v", CommandUndo, err)
	}
	reply := UndoReply{TaskID: rep.TaskID, Reverted: []string{}, Unchanged: []string{}, NotReverted: rep.NotReverted}
	if reply.NotReverted == nil {
		reply.NotReverted = []session.UndoFile{}
	}
	for _, f := range rep.Reverted {
		reply.Reverted = append(reply.Reverted, f.Path)
	}
	for _, f := range rep.Unchanged {
		reply.Unchanged = append(reply.Unchanged, f.Path)
	}
	typ := protocol.MessageTypeInfo
	switch {
	case len(rep.NotReverted) > 0:
		var names []string
		for _, f := range rep.NotReverted {
			names = append(names, f.Path)
		}
		typ = protocol.MessageTypeWarning
		reply.Summary = fmt.Sprintf("undid task %s: reverted %d file(s); not reverted (changed since the task): %s", rep.TaskID, len(rep.Reverted), strings.Join(names, ", "))
	case len(rep.Reverted) == 0:
		reply.Summary = fmt.Sprintf("task %s: nothing to undo", rep.TaskID)
	default:
		reply.Summary = fmt.Sprintf("undid task %s: reverted %s", rep.TaskID, strings.Join(reply.Reverted, ", "))
	}
	s.srv.ShowMessage(ctx, typ, "agentls: "+reply.Summary)
	return reply, nil
}

// states is a "state" filter: one state or a list.
type states []string

// UnmarshalJSON accepts "completed" or ["completed", "failed"].
func (s *states) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = states{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New(`"state" must be a string or an array of strings`)
	}
	*s = many
	return nil
}

// TasksArgs filters agentls.tasks. Zero fields do not filter.
type TasksArgs struct {
	// State keeps tasks in any of these states: completed, failed,
	// cancelled, a live state (queued, planning, executing, validating),
	// "live" (any live state), or "interrupted" (left live by an earlier
	// process: to resume).
	State states `json:"state,omitempty" expect:"string|string[] (\"interrupted\", \"live\", \"completed\", ...)"`
	// Since keeps tasks started at or after it: an RFC 3339 time, or a
	// duration back from now ("24h").
	Since string `json:"since,omitempty" expect:"RFC 3339 time or duration (\"24h\")"`
	// Limit bounds the stored tasks listed (default 100).
	Limit int `json:"limit,omitempty"`

	since time.Time
}

func (a TasksArgs) filter() session.Filter {
	return session.Filter{States: a.State, Since: a.since, Limit: a.Limit}
}

// Validate checks the arguments after decoding.
func (a *TasksArgs) Validate() error {
	t, err := parseSince(a.Since)
	if err != nil {
		return err
	}
	a.since = t
	if a.Limit < 0 {
		return errors.New(`"limit" must not be negative`)
	}
	return nil
}

func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf(`"since" must be an RFC 3339 time or a duration such as "24h", got %q`, s)
	}
	return t, nil
}

// tasksCommand lists this server's tasks and the stored ones of earlier
// runs (interrupted ones flagged), oldest first.
func (s *Service) tasksCommand(ctx context.Context, _ *server.Invocation, a TasksArgs) ([]TaskInfo, error) {
	out, err := s.Host().List(ctx, a.filter())
	if err != nil {
		return nil, requestFailed("%s: %v", CommandTasks, err)
	}
	return out, nil
}

// StatsArgs are the arguments of agentls.stats.
type StatsArgs struct {
	Since string `json:"since,omitempty" expect:"RFC 3339 time or duration (\"24h\")"` // RFC 3339 time or a duration back from now
	Top   int    `json:"top,omitempty"`                                                // tools listed (default 10)

	since time.Time
}

// Validate checks the arguments after decoding.
func (a *StatsArgs) Validate() error {
	t, err := parseSince(a.Since)
	a.since = t
	return err
}

// StatsReply is the reply of agentls.stats: the statistics of the
// workspace's stored tasks (they survive restarts) and a markdown
// view of them.
type StatsReply struct {
	*session.Stats
	Markdown string `json:"markdown"`
}

func (s *Service) statsCommand(ctx context.Context, _ *server.Invocation, a StatsArgs) (StatsReply, error) {
	stats, err := s.Host().Stats(ctx, a.since, a.Top)
	if err != nil {
		return StatsReply{}, requestFailed("%s: %v", CommandStats, err)
	}
	return StatsReply{Stats: stats, Markdown: statsMarkdown(stats)}, nil
}

// statsMarkdown renders the statistics for people.
func statsMarkdown(st *session.Stats) string {
	var b strings.Builder
	b.WriteString("# agentls statistics\n\n")
	fmt.Fprintf(&b, "- Tasks: %d (%d completed, %d failed, %d cancelled, %d live or interrupted)\n", st.Tasks, st.Completed, st.Failed, st.Cancelled, st.Live)
	fmt.Fprintf(&b, "- Completion rate: %.1f%% of ended tasks\n", 100*st.CompletionRate)
	fmt.Fprintf(&b, "- Model calls: %d (%.1f per task)\n", st.ModelCalls, st.CallsPerTask)
	fmt.Fprintf(&b, "- Tokens: %d in, %d out, %d cached (%.0f per task)\n", st.InputTokens, st.OutputTokens, st.CachedTokens, st.TokensPerTask)
	fmt.Fprintf(&b, "- Time in the model: %s; in tools: %s (%d calls)\n", st.ModelTime, st.ToolTime, st.ToolCalls)
	table := func(title string, ts []session.ToolStat) {
		if len(ts) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n| tool | calls | errors | median | p95 | max |\n|---|---|---|---|---|---|\n", title)
		for _, t := range ts {
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s |\n", t.Name, t.Calls, t.Errors, t.Median, t.P95, t.Max)
		}
	}
	table("Most used tools", st.MostUsedTools)
	table("Slowest tools", st.SlowestTools)
	return b.String()
}
