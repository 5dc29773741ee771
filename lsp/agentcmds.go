package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentls/agentls/lsp/server"
	"strings"
	"unicode/utf8"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// DiagnosticArg is an LSP Diagnostic passed to agentls.run (the "Fix with
// agent" code action passes the one it fixes). Fields agentls does not use
// are accepted and ignored.
type DiagnosticArg struct {
	Range              workspace.Range `json:"range"`
	Severity           int             `json:"severity,omitempty"` // 1 error, 2 warning, 3 information, 4 hint
	Code               json.RawMessage `json:"code,omitempty"`
	CodeDescription    json.RawMessage `json:"codeDescription,omitempty"`
	Source             string          `json:"source,omitempty"`
	Message            json.RawMessage `json:"message"` // a string or a MarkupContent
	Tags               json.RawMessage `json:"tags,omitempty"`
	RelatedInformation json.RawMessage `json:"relatedInformation,omitempty"`
	Data               json.RawMessage `json:"data,omitempty"`
}

// Text is the diagnostic's message as plain text.
func (d DiagnosticArg) Text() string {
	var s string
	if json.Unmarshal(d.Message, &s) == nil {
		return s
	}
	var mc struct {
		Value string `json:"value"`
	}
	if json.Unmarshal(d.Message, &mc) == nil {
		return mc.Value
	}
	return string(d.Message)
}

func severityName(n int) string {
	switch n {
	case 1:
		return "error"
	case 2:
		return "warning"
	case 3:
		return "information"
	case 4:
		return "hint"
	}
	return ""
}

// RunArgs is the argument of agentls.run.
type RunArgs struct {
	Prompt string `json:"prompt"`
	// Mode is "ask" or "edit"; empty: decided from the prompt (a question
	// that asks for no edit is "ask").
	Mode     string           `json:"mode,omitempty" expect:"\"ask\"|\"edit\"|\"plan\""`
	URI      string           `json:"uri,omitempty" expect:"DocumentUri"`
	Range    *workspace.Range `json:"range,omitempty"`
	FollowUp string           `json:"followUp,omitempty" expect:"taskId"`
	// Diagnostics are problems the editor shows at the range (optional).
	Diagnostics []DiagnosticArg `json:"diagnostics,omitempty" expect:"Diagnostic[]"`
}

// Validate checks the arguments after decoding.
func (a *RunArgs) Validate() error {
	if strings.TrimSpace(a.Prompt) == "" {
		return errors.New(`"prompt" must be a non-empty string`)
	}
	switch a.Mode {
	case "", "ask", "edit", "plan":
	case "dry-run":
		a.Mode = "plan"
	default:
		return fmt.Errorf(`"mode" must be "ask", "edit" or "plan", got %q`, a.Mode)
	}
	if a.Range != nil {
		if a.URI == "" {
			return errors.New(`"range" needs "uri"`)
		}
		if a.Range.End.Before(a.Range.Start) {
			return errors.New(`"range" ends before it starts`)
		}
	}
	if a.FollowUp != "" {
		if err := agent.CheckTaskID(a.FollowUp); err != nil {
			return fmt.Errorf(`"followUp": %w`, err)
		}
	}
	if a.URI != "" {
		if _, err := server.Filename(uri.URI(a.URI)); err != nil {
			return fmt.Errorf(`"uri": %v`, err)
		}
	}
	return nil
}

// TaskIDArgs is the argument of the commands that name one task.
type TaskIDArgs struct {
	TaskID string `json:"taskId"`
}

// Validate checks the arguments after decoding.
func (a *TaskIDArgs) Validate() error {
	if a.TaskID == "" {
		return errors.New(`"taskId" must be a non-empty string`)
	}
	if err := agent.CheckTaskID(a.TaskID); err != nil {
		return fmt.Errorf(`"taskId": %w`, err)
	}
	return nil
}

// Usage is the token usage in an agentls.run reply.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	CachedTokens int `json:"cachedTokens"`
}

// RunReply is the reply of agentls.run, sent when the task has ended.
type RunReply struct {
	TaskID       string   `json:"taskId"`
	Status       string   `json:"status"` // completed | failed | cancelled
	Summary      string   `json:"summary"`
	Answer       string   `json:"answer"` // the whole answer, never cut
	ChangedFiles []string `json:"changedFiles"`
	StopReason   string   `json:"stopReason"`
	LLMCalls     int      `json:"llmCalls"`
	Usage        Usage    `json:"usage"`
	Report       string   `json:"report,omitempty"` // file URI of the markdown report
	Mode         string   `json:"mode"`             // ask | edit | plan
	// Plan is the task's checklist as it ended; for a plan task, the plan
	// to execute with agentls.run {"mode": "edit", "followUp": taskId}.
	Plan         PlanReply `json:"plan"`
	PlannedFiles []string  `json:"plannedFiles,omitempty"` // files a plan task's plan would change
	// IntroducedErrors and FixedErrors are the editor's errors the task
	// introduced and fixed in the files it edited ("path:line: message").
	IntroducedErrors []string `json:"introducedErrors,omitempty"`
	FixedErrors      []string `json:"fixedErrors,omitempty"`
}

// PlanReply is a task's checklist in a reply: {"items": [{id, text, status,
// reason?, files?}]}.
type PlanReply struct {
	Items []tools.PlanItem `json:"items"`
}

// TaskInfo is one entry of the agentls.tasks reply.
type TaskInfo = session.TaskInfo

// CancelReply is the reply of agentls.cancel.
type CancelReply struct {
	TaskID    string `json:"taskId"`
	Cancelled bool   `json:"cancelled"` // false when the task had already ended
	State     string `json:"state"`
}

// ReportReply is the reply of agentls.showReport.
type ReportReply struct {
	TaskID string `json:"taskId"`
	Report string `json:"report"` // file URI
	Shown  bool   `json:"shown"`  // window/showDocument succeeded
}

// ResultReply is the reply of agentls.result: what a task answered, whole.
type ResultReply struct {
	TaskID       string   `json:"taskId"`
	Status       string   `json:"status"`
	Summary      string   `json:"summary"`
	Answer       string   `json:"answer"`
	ChangedFiles []string `json:"changedFiles"`
	Report       string   `json:"report,omitempty"` // file URI
}

// The agentls commands: one declaration each (name, argument and result
// types). Code actions build their commands with RunCommand.New, so a name
// is never a loose string.
var (
	RunCommand        = &server.Command[RunArgs, *RunReply]{Name: "agentls.run"}
	CancelCommand     = &server.Command[TaskIDArgs, CancelReply]{Name: "agentls.cancel"}
	TasksCommand      = &server.Command[TasksArgs, []TaskInfo]{Name: "agentls.tasks"}
	ShowReportCommand = &server.Command[TaskIDArgs, ReportReply]{Name: "agentls.showReport"}
	ResultCommand     = &server.Command[TaskIDArgs, ResultReply]{Name: "agentls.result"}
	ResumeCommand     = &server.Command[TaskIDArgs, *RunReply]{Name: "agentls.resume"}
	UndoCommand       = &server.Command[TaskIDArgs, UndoReply]{Name: "agentls.undo"}
	StatsCommand      = &server.Command[StatsArgs, StatsReply]{Name: "agentls.stats"}
)

// Names of the agentls commands (the public contract).
var (
	CommandRun        = RunCommand.Name
	CommandCancel     = CancelCommand.Name
	CommandTasks      = TasksCommand.Name
	CommandShowReport = ShowReportCommand.Name
	CommandResult     = ResultCommand.Name
	CommandResume     = ResumeCommand.Name
	CommandUndo       = UndoCommand.Name
	CommandStats      = StatsCommand.Name
)

// Commands returns the service's commands, each bound to its handler.
func (s *Service) Commands() []server.CommandHandler {
	return append([]server.CommandHandler{
		bind(RunCommand, s.runCommand),
		bind(CancelCommand, s.cancelCommand),
		bind(TasksCommand, s.tasksCommand),
		bind(ShowReportCommand, s.showReportCommand),
		bind(ResultCommand, s.resultCommand),
		bind(ResumeCommand, s.resumeCommand),
		bind(UndoCommand, s.undoCommand),
		bind(StatsCommand, s.statsCommand),
	}, s.extensionCommands()...)
}

// bind is the declaration c with run as its handler.
func bind[A, R any](c *server.Command[A, R], run func(context.Context, *server.Invocation, A) (R, error)) *server.Command[A, R] {
	b := *c
	b.Run = run
	return &b
}

func requestFailed(format string, args ...any) error {
	return jsonrpc2.Errorf(jsonrpc2.Code(protocol.LSPErrorCodesRequestFailed), format, args...)
}

// hostError maps a host error onto the reply's error: an unknown or running
// task is the caller's mistake (InvalidParams), anything else a failure.
func hostError(command string, err error) error {
	if errors.Is(err, session.ErrUnknownTask) || errors.Is(err, session.ErrRunning) {
		return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v", command, err)
	}
	return requestFailed("%s: %v", command, err)
}

func (s *Service) runCommand(ctx context.Context, inv *server.Invocation, a RunArgs) (*RunReply, error) {
	h := s.Host()
	ws, err := h.Workspace(ctx)
	if err != nil {
		s.srv.ShowMessage(ctx, protocol.MessageTypeError, "agentls: "+err.Error())
		return nil, requestFailed("%s: %v", CommandRun, err)
	}
	spec, err := s.TaskSpec(ctx, ws, a)
	if err != nil {
		return nil, err
	}
	return s.runTask(ctx, inv, spec)
}

// TaskSpec turns agentls.run's arguments into a task: the mode (left to
// the host when absent) and the editor context (file, lines, selected text,
// the identifier at the cursor, diagnostics in the range) read from the
// open buffer, else the disk.
func (s *Service) TaskSpec(ctx context.Context, ws *workspace.Workspace, a RunArgs) (agent.TaskSpec, error) {
	spec := agent.TaskSpec{Prompt: strings.TrimSpace(a.Prompt), FollowUp: a.FollowUp, Kind: agent.Kind(a.Mode)}
	if a.URI == "" {
		return spec, nil
	}
	name, err := server.Filename(uri.URI(a.URI))
	if err != nil {
		return spec, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: invalid argument: uri: %v; expected %s", CommandRun, err, RunCommand.Expect())
	}
	p, err := ws.Resolve(name)
	if err != nil {
		return spec, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: uri %s is not in the workspace (%s)", CommandRun, a.URI, strings.Join(ws.Roots(), ", "))
	}
	ec := agent.EditorContext{File: p.String()}
	var text string
	var haveText bool
	if doc, ok := s.srv.Buffers().Get(name); ok {
		text, haveText = doc.Text, true
	} else if f, err := ws.ReadFile(ctx, p); err == nil {
		text, haveText = f.Text, true
	}
	if a.Range != nil {
		r := *a.Range
		ec.StartLine = int(r.Start.Line) + 1
		ec.EndLine = int(r.End.Line) + 1
		if r.End.Line > r.Start.Line && r.End.Character == 0 {
			ec.EndLine-- // a selection of whole lines ends at the next line's start
		}
		if haveText {
			start, err1 := workspace.OffsetOf(text, r.Start)
			end, err2 := workspace.OffsetOf(text, r.End)
			if err1 == nil && err2 == nil {
				if end > start {
					ec.Selection = clipText(text[start:end], 8<<10)
				}
				ec.Symbol = symbolAt(text, start, end)
			}
		}
		for _, d := range a.Diagnostics {
			if r.Intersects(d.Range) {
				ec.Diagnostics = append(ec.Diagnostics, toAgentDiagnostic(d))
			}
		}
	} else {
		for _, d := range a.Diagnostics {
			ec.Diagnostics = append(ec.Diagnostics, toAgentDiagnostic(d))
		}
	}
	spec.Context = ec
	return spec, nil
}

func toAgentDiagnostic(d DiagnosticArg) agent.Diagnostic {
	return agent.Diagnostic{Severity: severityName(d.Severity), Line: int(d.Range.Start.Line) + 1, Message: d.Text(), Source: d.Source}
}

// clipText cuts s to at most n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "\n[... selection cut]"
}

// titleOf is the progress title: "agentls: " and the first words of the
// prompt's first line.
func titleOf(prompt string) string {
	prompt, _, _ = strings.Cut(strings.TrimSpace(prompt), "\n") // the first line: notes follow it
	words := strings.Fields(prompt)
	const maxWords, maxLen = 8, 60
	var b strings.Builder
	for i, w := range words {
		if i == maxWords || b.Len()+len(w) > maxLen {
			b.WriteString("…")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return "agentls: " + b.String()
}

// runTask runs one task (spec.ResumeID set: a resume) to its end and returns
// the reply: progress (the client's token, else a created one, else
// messages), cancellation by $/cancelRequest (ctx),
// window/workDoneProgress/cancel and agentls.cancel, and a
// window/showMessage with the summary before it returns.
func (s *Service) runTask(ctx context.Context, inv *server.Invocation, spec agent.TaskSpec) (*RunReply, error) {
	h := s.Host()
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	title := spec.Prompt
	if spec.ResumeID != "" {
		title = "resume " + spec.ResumeID + ": " + spec.Prompt
	}
	// Executing a plan is titled after the plan, not after "go ahead".
	if prev := h.Task(spec.FollowUp); spec.FollowUp != "" && prev != nil && prev.Spec().Kind == agent.KindPlan && spec.Kind == agent.KindEdit {
		title = "execute the plan: " + prev.Spec().Prompt
	}
	wd := s.srv.Progress().Start(ctx, inv.WorkDoneToken, titleOf(title), "starting", cancel)
	port := &taskPort{svc: s, sink: newProgressSink(wd, h.Settings().MaxTurns), answer: s.newAnswerStream(ctx)}
	t, err := h.Start(tctx, spec, port)
	if err != nil {
		wd.End("not started: " + err.Error())
		var noKey *session.ErrNoAPIKey
		if errors.As(err, &noKey) || !isArgumentError(err) {
			s.srv.ShowMessage(ctx, protocol.MessageTypeError, "agentls: "+err.Error())
			return nil, requestFailed("%s: %v", CommandRun, err)
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v", CommandRun, err)
	}
	out, _ := t.Wait(context.WithoutCancel(ctx))
	reply := replyOf(out)
	port.answer.Close() // the streamed answer's end comes before the reply

	// The summary goes out before the reply (Emacs clients show or drop
	// messages that follow it): the progress end, and a message.
	wd.End(reply.Summary)
	if wd.Token() != nil {
		s.srv.ShowMessage(ctx, statusMessageType(out.Result.Status), "agentls: "+reply.Summary)
	}
	if out.Report != "" && h.Settings().ShowReport {
		s.srv.ShowDocument(ctx, uri.File(out.Report))
	}
	return reply, nil
}

// isArgumentError reports whether a task could not start because of what
// the caller asked (an unknown follow-up, a bad mode), not because of the
// server's state.
func isArgumentError(err error) bool {
	if errors.As(err, new(*session.PromptTooLargeError)) {
		return true
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "start task:") || strings.HasPrefix(msg, "resume ")
}

func statusMessageType(st agent.State) protocol.MessageType {
	switch st {
	case agent.StateCompleted:
		return protocol.MessageTypeInfo
	case agent.StateCancelled:
		return protocol.MessageTypeWarning
	}
	return protocol.MessageTypeError
}

func replyOf(out *session.Outcome) *RunReply {
	res := out.Result
	r := &RunReply{
		TaskID:       res.TaskID,
		Status:       string(res.Status),
		Summary:      out.Summary,
		Answer:       res.Answer,
		ChangedFiles: []string{},
		StopReason:   string(res.StopReason),
		Mode:         string(res.Kind),
		Plan:         PlanReply{Items: append([]tools.PlanItem{}, res.Plan.Items...)},
		PlannedFiles: res.PlannedFiles,
		LLMCalls:     res.ModelCalls,
		Usage:        Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CachedTokens: res.Usage.CachedTokens},
	}
	for _, f := range res.Files {
		r.ChangedFiles = append(r.ChangedFiles, f.Path)
	}
	if out.Report != "" {
		r.Report = string(uri.File(out.Report))
	}
	if d := out.Diagnostics; d != nil {
		for _, e := range d.Introduced {
			r.IntroducedErrors = append(r.IntroducedErrors, e.String())
		}
		for _, e := range d.Fixed {
			r.FixedErrors = append(r.FixedErrors, e.String())
		}
	}
	return r
}

func (s *Service) cancelCommand(_ context.Context, _ *server.Invocation, a TaskIDArgs) (CancelReply, error) {
	h := s.Host()
	t := h.Task(a.TaskID)
	if t == nil {
		return CancelReply{}, s.unknownTask(a.TaskID)
	}
	cancelled, err := h.Cancel(a.TaskID)
	if err != nil {
		return CancelReply{}, hostError(CommandCancel, err)
	}
	return CancelReply{TaskID: a.TaskID, Cancelled: cancelled, State: string(t.State())}, nil
}

// unknownTask is the error for a task id this server did not start.
func (s *Service) unknownTask(id string) error {
	var ids []string
	for _, t := range s.Host().Tasks() {
		ids = append(ids, t.ID())
	}
	known := strings.Join(ids, ", ")
	if known == "" {
		known = "none yet"
	}
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "no task %q in this session (tasks: %s)", id, known)
}

// TaskList lists the tasks of this server, oldest first, and those the
// session store keeps from earlier runs.
func (s *Service) TaskList() []TaskInfo {
	out, err := s.Host().List(context.Background(), session.Filter{})
	if err != nil {
		s.log().Warn("task list", "error", err)
	}
	return out
}

func (s *Service) showReportCommand(ctx context.Context, _ *server.Invocation, a TaskIDArgs) (ReportReply, error) {
	h := s.Host()
	if t := h.Task(a.TaskID); t != nil && !t.State().Terminal() {
		return ReportReply{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: task %s is still running; its report is written when it ends", CommandShowReport, a.TaskID)
	}
	path := h.ReportIfWritten(ctx, a.TaskID)
	if path == "" {
		if _, err := h.Result(ctx, a.TaskID); err != nil {
			return ReportReply{}, hostError(CommandShowReport, err)
		}
		return ReportReply{}, requestFailed("%s: the report of task %s was not written (see the log)", CommandShowReport, a.TaskID)
	}
	u := uri.File(path)
	shown := s.srv.ShowDocument(ctx, u)
	return ReportReply{TaskID: a.TaskID, Report: string(u), Shown: shown}, nil
}

func (s *Service) resultCommand(ctx context.Context, _ *server.Invocation, a TaskIDArgs) (ResultReply, error) {
	r, err := s.Host().Result(ctx, a.TaskID)
	if err != nil {
		return ResultReply{}, hostError(CommandResult, err)
	}
	reply := ResultReply{TaskID: r.TaskID, Status: r.Status, Summary: r.Summary, Answer: r.Answer, ChangedFiles: r.ChangedFiles}
	if r.Report != "" {
		reply.Report = string(uri.File(r.Report))
	}
	return reply, nil
}
