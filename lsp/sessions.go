package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/workspace"
)

// The session layer (issue 9): one session database per workspace (its
// primary root's .agentls/agentls.db, or the file named by
// AGENTLS_SESSION_DB), handed to every runner, so tasks are stored as they
// run (L29); agentls.resume continues a task a crash or kill interrupted;
// agentls.undo reverts a whole task; agentls.tasks lists stored tasks with
// filters, interrupted ones included; agentls.stats gives the statistics.
// The databases are closed, their writes drained, when the service closes
// (L27).

// CommandStats is the name of the statistics command.
const CommandStats = "agentls.stats"

// sessionDBEnv names a variable that overrides the database location.
const sessionDBEnv = "AGENTLS_SESSION_DB"

// sessionStores are the open session databases of the service.
type sessionStores struct {
	mu     sync.Mutex // guards the fields below
	byPath map[string]*store.Store
	closed bool
}

// sessionStore returns the session database of ws, opening it on first use.
func (s *Service) sessionStore(ctx context.Context, ws *workspace.Workspace) (*store.Store, error) {
	path := s.getenv(sessionDBEnv)
	if path == "" {
		path = store.DefaultPath(ws.Roots()[0])
	}
	ss := &s.sessions
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, errors.New("agentls is shutting down")
	}
	if st, ok := ss.byPath[path]; ok {
		return st, nil
	}
	st, err := store.Open(ctx, path, store.Options{Secrets: s.secrets})
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	if ss.byPath == nil {
		ss.byPath = map[string]*store.Store{}
	}
	ss.byPath[path] = st
	s.log().Info("session store open", "path", st.Path())
	return st, nil
}

// configureSessions gives a new runner its session database, the workspace
// for resume, and the flight recorder setting.
func (s *Service) configureSessions(acfg *agent.Config, cfg Config, ws *workspace.Workspace) {
	acfg.Files = ws
	acfg.NoRecord = !cfg.Recordings
	st, err := s.sessionStore(context.Background(), ws)
	if err != nil {
		s.log().Warn("tasks are not stored", "error", err)
		return
	}
	acfg.Store = st
}

// closeSessions drains and closes every session database (L27). The service
// calls it after its tasks have ended.
func (s *Service) closeSessions() {
	ss := &s.sessions
	ss.mu.Lock()
	ss.closed = true
	stores := ss.byPath
	ss.byPath = nil
	ss.mu.Unlock()
	for _, st := range stores {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.DrainTimeout)
		if err := st.Close(ctx); err != nil {
			s.log().Warn("session store close", "path", st.Path(), "error", err)
		}
		cancel()
	}
}

// sessionOptions registers the session commands; agentls.tasks replaces the
// in-memory listing with one that also lists stored tasks.
func (s *Service) sessionOptions() []Option {
	resume := *ResumeCommand
	resume.Run = s.resumeCommand
	undo := *UndoCommand
	undo.Run = s.undoCommand
	list := *StoredTasksCommand
	list.Run = s.tasksCommand
	stats := *StatsCommand
	stats.Run = s.statsCommand
	return []Option{WithCommands(&resume, &undo, &list, &stats)}
}

// Typed session commands.
var (
	// ResumeCommand is agentls.resume.
	ResumeCommand = &Command[TaskIDArgs]{Name: CommandResume, Expect: taskIDExpect}
	// UndoCommand is agentls.undo.
	UndoCommand = &Command[TaskIDArgs]{Name: CommandUndo, Expect: taskIDExpect}
	// StoredTasksCommand is agentls.tasks with filters.
	StoredTasksCommand = &Command[TasksArgs]{Name: CommandTasks, Expect: `no argument, or {"state"?: string|string[] ("interrupted", "live", "completed", ...), "since"?: RFC 3339 time or duration ("24h"), "limit"?: number}`}
	// StatsCommand is agentls.stats.
	StatsCommand = &Command[StatsArgs]{Name: CommandStats, Expect: `no argument, or {"since"?: RFC 3339 time or duration ("24h"), "top"?: number}`}
)

func requestFailed(format string, args ...any) error {
	return jsonrpc2.Errorf(jsonrpc2.Code(protocol.LSPErrorCodesRequestFailed), format, args...)
}

// storeOf returns the workspace and its session database for a command.
func (s *Service) storeOf(ctx context.Context, command string) (*workspace.Workspace, *store.Store, error) {
	ws, err := s.Workspace(ctx)
	if err != nil {
		return nil, nil, requestFailed("%s: %v", command, err)
	}
	st, err := s.sessionStore(ctx, ws)
	if err != nil {
		return nil, nil, requestFailed("%s: %v", command, err)
	}
	return ws, st, nil
}

// runningHere reports whether the task runs in this server now.
func (s *Service) runningHere(id string) bool {
	s.mu.Lock()
	e, ok := s.tasks[id]
	s.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-e.ready:
		return !e.task.State().Terminal()
	default:
		return true
	}
}

// resumeCommand continues an interrupted task (same ID) through the same
// pipeline as agentls.run (progress, report, summary); the reply is
// agentls.run's.
func (s *Service) resumeCommand(ctx context.Context, inv *Invocation, a TaskIDArgs) (any, error) {
	_, st, err := s.storeOf(ctx, CommandResume)
	if err != nil {
		return nil, err
	}
	t, err := st.Task(ctx, a.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: no stored task %q (agentls.tasks lists them)", CommandResume, a.TaskID)
	}
	if err != nil {
		return nil, requestFailed("%s: %v", CommandResume, err)
	}
	if store.Terminal(t.State) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: task %s has ended (%s); nothing to resume: start a follow-up instead", CommandResume, t.ID, t.State)
	}
	if s.runningHere(t.ID) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: task %s is running", CommandResume, t.ID)
	}
	reply, err := s.RunTask(ctx, inv, agent.TaskSpec{Kind: agent.Kind(t.Kind), Prompt: t.Prompt, ResumeID: t.ID})
	if err != nil {
		return nil, err
	}
	return jsonReply(reply)
}

// UndoReply is the reply of agentls.undo.
type UndoReply struct {
	TaskID      string           `json:"taskId"`
	Reverted    []string         `json:"reverted"`  // workspace-relative paths written back or deleted
	Unchanged   []string         `json:"unchanged"` // already as before the task
	NotReverted []agent.UndoFile `json:"notReverted"`
	Summary     string           `json:"summary"`
}

// undoCommand reverts every edit of a task: the open files in one
// workspace/applyEdit, the others on disk; files changed since the task are
// merged around the change or left alone and reported with a diff.
func (s *Service) undoCommand(ctx context.Context, _ *Invocation, a TaskIDArgs) (any, error) {
	ws, st, err := s.storeOf(ctx, CommandUndo)
	if err != nil {
		return nil, err
	}
	if s.runningHere(a.TaskID) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: task %s is running; cancel it first", CommandUndo, a.TaskID)
	}
	rep, err := agent.Undo(ctx, st, a.TaskID, ws, &undoEditor{svc: s, ws: ws})
	if errors.Is(err, store.ErrNotFound) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: no stored task %q (agentls.tasks lists them)", CommandUndo, a.TaskID)
	}
	if err != nil {
		s.srv.ShowMessage(ctx, protocol.MessageTypeError, "agentls: "+err.Error())
		return nil, requestFailed("%s: %v", CommandUndo, err)
	}
	reply := UndoReply{TaskID: rep.TaskID, Reverted: []string{}, Unchanged: []string{}, NotReverted: rep.NotReverted}
	if reply.NotReverted == nil {
		reply.NotReverted = []agent.UndoFile{}
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
	s.log().Info("task undone", "task", rep.TaskID, "reverted", len(rep.Reverted), "notReverted", len(rep.NotReverted))
	return jsonReply(reply)
}

// undoEditor applies an undo: the files open in the editor through one
// workspace/applyEdit (the service's Editor), the others on disk.
type undoEditor struct {
	svc *Service
	ws  *workspace.Workspace
}

func (u *undoEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	var open, disk []workspace.FileEdit
	for _, fe := range edits {
		if _, ok := u.svc.srv.Buffers().Get(u.ws.Abs(fe.Path)); ok && !fe.Create {
			open = append(open, fe)
		} else {
			disk = append(disk, fe)
		}
	}
	if len(open) > 0 {
		if err := u.svc.NewEditor(u.ws).Apply(ctx, label, open); err != nil {
			return err
		}
	}
	if len(disk) > 0 {
		if err := u.ws.DiskEditor().Apply(ctx, label, disk); err != nil {
			if len(open) > 0 {
				return fmt.Errorf("the open files were reverted, the others were not: %w", err)
			}
			return err
		}
	}
	return nil
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
	State states `json:"state,omitempty"`
	// Since keeps tasks started at or after it: an RFC 3339 time, or a
	// duration back from now ("24h").
	Since string `json:"since,omitempty"`
	// Limit bounds the stored tasks listed (default 100).
	Limit int `json:"limit,omitempty"`

	since time.Time
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

// StoredTaskInfo is one entry of the agentls.tasks reply: the fields of
// TaskInfo, and what the session store knows.
type StoredTaskInfo struct {
	TaskInfo
	// Interrupted: left in a live state by an earlier process (crash,
	// kill); agentls.resume continues it.
	Interrupted bool   `json:"interrupted,omitempty"`
	StopReason  string `json:"stopReason,omitempty"`
	Summary     string `json:"summary,omitempty"`
	LLMCalls    int    `json:"llmCalls"`
	FollowUpOf  string `json:"followUpOf,omitempty"`
}

func (a TasksArgs) keep(state string, interrupted bool, started time.Time) bool {
	if !a.since.IsZero() && started.Before(a.since) {
		return false
	}
	if len(a.State) == 0 {
		return true
	}
	for _, want := range a.State {
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

// tasksCommand lists this server's tasks and the stored ones of earlier
// runs (interrupted ones flagged), oldest first.
func (s *Service) tasksCommand(ctx context.Context, _ *Invocation, a TasksArgs) (any, error) {
	var out []StoredTaskInfo
	mine := map[string]bool{}
	for _, ti := range s.TaskList() {
		mine[ti.ID] = true
		if a.keep(ti.State, false, ti.Started) {
			out = append(out, StoredTaskInfo{TaskInfo: ti})
		}
	}
	ws, err := s.Workspace(ctx)
	if err == nil {
		st, serr := s.sessionStore(ctx, ws)
		if serr != nil {
			return nil, requestFailed("%s: %v", CommandTasks, serr)
		}
		stored, err := st.Tasks(ctx, store.TaskFilter{Since: a.since, Limit: a.Limit})
		if err != nil {
			return nil, requestFailed("%s: %v", CommandTasks, err)
		}
		for i := len(stored) - 1; i >= 0; i-- { // oldest first
			t := stored[i]
			if mine[t.ID] {
				continue
			}
			interrupted := !store.Terminal(t.State)
			if !a.keep(t.State, interrupted, t.CreatedAt) {
				continue
			}
			end := t.EndedAt
			if end.IsZero() {
				end = t.UpdatedAt
			}
			info := StoredTaskInfo{
				TaskInfo: TaskInfo{ID: t.ID, Prompt: t.Prompt, Mode: t.Kind, State: t.State,
					Plan: PlanProgress{Items: []string{}}, Started: t.CreatedAt.UTC(), Duration: end.Sub(t.CreatedAt).Milliseconds()},
				Interrupted: interrupted, StopReason: t.StopReason, Summary: t.Summary, LLMCalls: t.LLMCalls, FollowUpOf: t.FollowUpOf,
			}
			out = append(out, info)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	if out == nil {
		out = []StoredTaskInfo{}
	}
	return jsonReply(out)
}

// StatsArgs are the arguments of agentls.stats.
type StatsArgs struct {
	Since string `json:"since,omitempty"` // RFC 3339 time or a duration back from now
	Top   int    `json:"top,omitempty"`   // tools listed (default 10)

	since time.Time
}

// Validate checks the arguments after decoding.
func (a *StatsArgs) Validate() error {
	t, err := parseSince(a.Since)
	a.since = t
	return err
}

// StatsReply is the reply of agentls.stats: the statistics of the
// workspace's stored tasks (they survive restarts, L29) and a markdown
// view of them.
type StatsReply struct {
	*store.Stats
	Markdown string `json:"markdown"`
}

func (s *Service) statsCommand(ctx context.Context, _ *Invocation, a StatsArgs) (any, error) {
	_, st, err := s.storeOf(ctx, CommandStats)
	if err != nil {
		return nil, err
	}
	stats, err := st.Stats(ctx, a.since, a.Top)
	if err != nil {
		return nil, requestFailed("%s: %v", CommandStats, err)
	}
	return jsonReply(StatsReply{Stats: stats, Markdown: statsMarkdown(stats)})
}

// statsMarkdown renders the statistics for people.
func statsMarkdown(st *store.Stats) string {
	var b strings.Builder
	b.WriteString("# agentls statistics\n\n")
	fmt.Fprintf(&b, "- Tasks: %d (%d completed, %d failed, %d cancelled, %d live or interrupted)\n", st.Tasks, st.Completed, st.Failed, st.Cancelled, st.Live)
	fmt.Fprintf(&b, "- Completion rate: %.1f%% of ended tasks\n", 100*st.CompletionRate)
	fmt.Fprintf(&b, "- Model calls: %d (%.1f per task)\n", st.ModelCalls, st.CallsPerTask)
	fmt.Fprintf(&b, "- Tokens: %d in, %d out, %d cached (%.0f per task)\n", st.InputTokens, st.OutputTokens, st.CachedTokens, st.TokensPerTask)
	fmt.Fprintf(&b, "- Time in the model: %s; in tools: %s (%d calls)\n", st.ModelTime, st.ToolTime, st.ToolCalls)
	table := func(title string, ts []store.ToolStat) {
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
