package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Position is a position in a document (0-based line, UTF-16 character).
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is a range in a document, as LSP sends it.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Empty reports whether the range selects nothing.
func (r Range) Empty() bool { return r.Start == r.End }

func (r Range) ws() workspace.Range {
	return workspace.Range{
		Start: workspace.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   workspace.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

func before(a, b Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Character < b.Character
}

// intersects reports whether r and o share a position (touching counts).
func (r Range) intersects(o Range) bool {
	return !before(o.End, r.Start) && !before(r.End, o.Start)
}

// DiagnosticArg is an LSP Diagnostic passed to agentls.run (the "Fix with
// agent" code action passes the one it fixes). Fields agentls does not use
// are accepted and ignored.
type DiagnosticArg struct {
	Range              Range           `json:"range"`
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
	Mode     string `json:"mode,omitempty"`
	URI      string `json:"uri,omitempty"`
	Range    *Range `json:"range,omitempty"`
	FollowUp string `json:"followUp,omitempty"`
	// Diagnostics are problems the editor shows at the range (optional).
	Diagnostics []DiagnosticArg `json:"diagnostics,omitempty"`
}

// Validate checks the arguments after decoding.
func (a *RunArgs) Validate() error {
	if strings.TrimSpace(a.Prompt) == "" {
		return errors.New(`"prompt" must be a non-empty string`)
	}
	switch a.Mode {
	case "", "ask", "edit":
	default:
		return fmt.Errorf(`"mode" must be "ask" or "edit", got %q`, a.Mode)
	}
	if a.Range != nil {
		if a.URI == "" {
			return errors.New(`"range" needs "uri"`)
		}
		if before(a.Range.End, a.Range.Start) {
			return errors.New(`"range" ends before it starts`)
		}
	}
	if a.URI != "" {
		if _, err := filenameOf(uri.URI(a.URI)); err != nil {
			return fmt.Errorf(`"uri": %v`, err)
		}
	}
	return nil
}

// TaskIDArgs is the argument of agentls.cancel and agentls.showReport.
type TaskIDArgs struct {
	TaskID string `json:"taskId"`
}

// Validate checks the arguments after decoding.
func (a *TaskIDArgs) Validate() error {
	if a.TaskID == "" {
		return errors.New(`"taskId" must be a non-empty string`)
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
	Answer       string   `json:"answer"`
	ChangedFiles []string `json:"changedFiles"` // workspace-relative
	StopReason   string   `json:"stopReason"`
	LLMCalls     int      `json:"llmCalls"`
	Usage        Usage    `json:"usage"`
	Report       string   `json:"report,omitempty"` // file URI of the markdown report
}

// TaskInfo is one entry of the agentls.tasks reply.
type TaskInfo struct {
	ID       string       `json:"id"`
	Prompt   string       `json:"prompt"`
	Mode     string       `json:"mode"`
	State    string       `json:"state"`
	Plan     PlanProgress `json:"plan"`
	Started  time.Time    `json:"started"`
	Duration int64        `json:"duration"` // milliseconds, so far for a running task
	Report   string       `json:"report,omitempty"`
}

// PlanProgress is how far a task's plan is.
type PlanProgress struct {
	Done  int      `json:"done"`  // items done or skipped
	Total int      `json:"total"` // items
	Items []string `json:"items"` // "[x] text", one per item
}

// Expected-argument descriptions, for InvalidParams messages.
const (
	runExpect    = `{"prompt": string, "mode"?: "ask"|"edit", "uri"?: DocumentUri, "range"?: Range, "followUp"?: taskId, "diagnostics"?: Diagnostic[]}`
	taskIDExpect = `{"taskId": string}`
)

// Typed commands of the service. Code actions build their commands with
// RunCommand.New, so the name is never a loose string.
var (
	// RunCommand is agentls.run.
	RunCommand = &Command[RunArgs]{Name: CommandRun, Expect: runExpect}
	// CancelCommand is agentls.cancel.
	CancelCommand = &Command[TaskIDArgs]{Name: CommandCancel, Expect: taskIDExpect}
	// TasksCommand is agentls.tasks.
	TasksCommand = &Command[struct{}]{Name: CommandTasks, Expect: `no argument, or {}`}
	// ShowReportCommand is agentls.showReport.
	ShowReportCommand = &Command[TaskIDArgs]{Name: CommandShowReport, Expect: taskIDExpect}
)

// Commands returns the service's commands: agentls.run, agentls.cancel,
// agentls.tasks and agentls.showReport.
func (s *Service) Commands() []CommandHandler {
	run := *RunCommand
	run.Run = s.runCommand
	cancel := *CancelCommand
	cancel.Run = s.cancelCommand
	list := *TasksCommand
	list.Run = func(context.Context, *Invocation, struct{}) (any, error) { return jsonReply(s.TaskList()) }
	report := *ShowReportCommand
	report.Run = s.showReportCommand
	return []CommandHandler{&run, &cancel, &list, &report}
}

// jsonReply encodes v with encoding/json (the reply's shape is exactly its
// json tags).
func jsonReply(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode reply: %w", err)
	}
	return json.RawMessage(b), nil
}

// taskEntry is the service's record of one task started through the editor.
type taskEntry struct {
	spec    agent.TaskSpec
	runner  *agent.Runner
	client  *llm.Client
	ws      *workspace.Workspace
	started time.Time
	cancel  context.CancelFunc

	ready chan struct{} // closed once id and task are set
	id    string
	task  *agent.Task

	mu         sync.Mutex // guards the fields below
	commands   []tools.CommandOutput
	ended      time.Time
	result     *agent.Result
	reportPath string
}

type entryKey struct{}

// entryOf returns the task entry a task's context carries.
func entryOf(ctx context.Context) *taskEntry {
	e, _ := ctx.Value(entryKey{}).(*taskEntry)
	return e
}

func (e *taskEntry) addCommand(co tools.CommandOutput) {
	e.mu.Lock()
	e.commands = append(e.commands, co)
	e.mu.Unlock()
}

// label names the task in edits and approvals.
func (e *taskEntry) label() string {
	select {
	case <-e.ready:
		return e.id
	default:
		return "task"
	}
}

func (s *Service) runCommand(ctx context.Context, inv *Invocation, a RunArgs) (any, error) {
	ws, err := s.Workspace(ctx)
	if err != nil {
		s.srv.ShowMessage(ctx, protocol.MessageTypeError, "agentls: "+err.Error())
		return nil, jsonrpc2.NewError(jsonrpc2.Code(protocol.LSPErrorCodesRequestFailed), "agentls.run: "+err.Error())
	}
	spec, err := s.TaskSpec(ctx, ws, a)
	if err != nil {
		return nil, err
	}
	reply, err := s.RunTask(ctx, inv, spec)
	if err != nil {
		return nil, err
	}
	return jsonReply(reply)
}

// TaskSpec turns agentls.run's arguments into a task: the mode (decided
// from the prompt when absent) and the editor context (file, lines,
// selected text, the identifier at the cursor, diagnostics in the range)
// read from the open buffer, else the disk.
func (s *Service) TaskSpec(ctx context.Context, ws *workspace.Workspace, a RunArgs) (agent.TaskSpec, error) {
	spec := agent.TaskSpec{Prompt: strings.TrimSpace(a.Prompt), FollowUp: a.FollowUp, Kind: agent.Kind(a.Mode)}
	if a.Mode == "" {
		spec.Kind = DecideMode(a.Prompt)
	}
	if a.URI == "" {
		return spec, nil
	}
	name, err := filenameOf(uri.URI(a.URI))
	if err != nil {
		return spec, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: invalid argument: uri: %v; expected %s", CommandRun, err, runExpect)
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
			start, err1 := workspace.OffsetOf(text, r.ws().Start)
			end, err2 := workspace.OffsetOf(text, r.ws().End)
			if err1 == nil && err2 == nil {
				if end > start {
					ec.Selection = clipText(text[start:end], 8<<10)
				}
				ec.Symbol = symbolAt(text, start, end)
			}
		}
		for _, d := range a.Diagnostics {
			if r.intersects(d.Range) {
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

var (
	editVerbs     = regexp.MustCompile(`(?i)\b(fix|add|change|rename|refactor|implement|write|create|remove|delete|update|replace|make|move|convert|generate|insert|apply|edit|modify|rewrite|format|clean ?up|optimi[sz]e|improve|simplify|extract|inline|migrate|upgrade|bump|port|translate|document|comment out|uncomment|set|turn|split|merge|introduce|append|prepend|drop)\b`)
	questionStart = regexp.MustCompile(`(?i)^\s*(what|why|how|where|which|who|whom|whose|when|is|are|was|were|does|do|did|can|could|should|would|will|has|have|explain|describe|summari[sz]e|tell me|show me|list|find|locate|search|look up|where's|what's|how's|why's)\b`)
	// Requests that look like questions but ask for a change.
	editQuestion = regexp.MustCompile(`(?i)^\s*(can|could|would|will) you (please )?(fix|add|change|rename|refactor|implement|write|create|remove|delete|update|replace|make|move|convert|generate|insert|edit|modify|rewrite|format)\b`)
)

// DecideMode picks the task kind of a prompt sent without a mode: "ask"
// when it is a question and asks for no edit, else "edit". A verb inside a
// question ("how do I add a flag?") does not make it an edit; a request
// phrased as a question ("can you fix the test?") does.
func DecideMode(prompt string) agent.Kind {
	p := strings.TrimSpace(prompt)
	question := strings.HasSuffix(p, "?") || questionStart.MatchString(p)
	switch {
	case editQuestion.MatchString(p):
		return agent.KindEdit
	case question:
		return agent.KindAsk
	case editVerbs.MatchString(p):
		return agent.KindEdit
	}
	return agent.KindEdit
}

// titleOf is the progress title: "agentls: " and the prompt's first words.
func titleOf(prompt string) string {
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

// RunTask runs one task to its end and returns the reply of agentls.run:
// progress (the client's token, else a created one, else messages),
// cancellation by $/cancelRequest (ctx), window/workDoneProgress/cancel and
// agentls.cancel, the report written to .agentls/tasks/ID.md, and a
// window/showMessage with the summary before it returns. It is the
// pipeline every command that starts a task uses (agentls.run, and
// agentls.resume with spec.Resume set).
func (s *Service) RunTask(ctx context.Context, inv *Invocation, spec agent.TaskSpec) (*RunReply, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, jsonrpc2.NewError(jsonrpc2.Code(protocol.LSPErrorCodesRequestFailed), "agentls is shutting down")
	}
	s.running.Add(1)
	s.mu.Unlock()
	defer s.running.Done()

	fail := func(err error) (*RunReply, error) {
		s.srv.ShowMessage(ctx, protocol.MessageTypeError, "agentls: "+err.Error())
		return nil, jsonrpc2.NewError(jsonrpc2.Code(protocol.LSPErrorCodesRequestFailed), CommandRun+": "+err.Error())
	}
	cfg := s.srv.Config()
	client, err := s.modelClient(cfg)
	if err != nil {
		return fail(err)
	}
	ws, err := s.Workspace(ctx)
	if err != nil {
		return fail(err)
	}
	runner, err := s.runnerFor(ws, cfg, spec.FollowUp)
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v", CommandRun, err)
	}

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e := &taskEntry{spec: spec, runner: runner, client: client, ws: ws, started: time.Now(), cancel: cancel, ready: make(chan struct{})}
	tctx = context.WithValue(tctx, entryKey{}, e)

	wd := s.srv.Progress().Start(ctx, inv.WorkDoneToken, titleOf(spec.Prompt), "starting ("+string(spec.Kind)+")", cancel)
	sink := newProgressSink(wd, s.OnEvent)
	task, err := runner.Start(tctx, spec, sink)
	if err != nil {
		wd.End("not started: " + err.Error())
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: %v", CommandRun, err)
	}
	e.id, e.task = task.ID(), task
	sink.setID(e.id)
	close(e.ready)
	s.mu.Lock()
	s.tasks[e.id] = e
	s.order = append(s.order, e.id)
	closed := s.closed
	s.mu.Unlock()
	if closed {
		cancel()
	}
	s.log().Info("task started", "task", e.id, "kind", spec.Kind, "prompt", clipText(spec.Prompt, 200))

	<-task.Done()
	res := task.Result()
	reportPath, rerr := writeReport(ws.StateDir(), e, res, s.secrets()...)
	if rerr != nil {
		s.log().Warn("task report not written", "task", e.id, "error", rerr)
	}
	e.mu.Lock()
	e.ended, e.result, e.reportPath = time.Now(), res, reportPath
	e.mu.Unlock()
	if s.OnTaskEnd != nil {
		s.OnTaskEnd(res, reportPath)
	}
	reply := replyOf(res, reportPath)
	s.log().Info("task ended", "task", e.id, "status", res.Status, "stopReason", res.StopReason,
		"modelCalls", res.ModelCalls, "duration", res.Duration)

	// The summary goes out before the reply (Emacs clients show or drop
	// messages that follow it): the progress end, and a message.
	wd.End(reply.Summary)
	if wd.Token() != nil {
		s.srv.ShowMessage(ctx, statusMessageType(res.Status), "agentls: "+reply.Summary)
	}
	if reportPath != "" && cfg.ShowReport {
		s.srv.showDocument(ctx, uri.File(reportPath))
	}
	return reply, nil
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

func replyOf(res *agent.Result, reportPath string) *RunReply {
	r := &RunReply{
		TaskID:       res.TaskID,
		Status:       string(res.Status),
		Summary:      Summary(res),
		Answer:       res.Answer,
		ChangedFiles: []string{},
		StopReason:   string(res.StopReason),
		LLMCalls:     res.ModelCalls,
		Usage:        Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CachedTokens: res.Usage.CachedTokens},
	}
	for _, f := range res.Files {
		r.ChangedFiles = append(r.ChangedFiles, f.Path)
	}
	if reportPath != "" {
		r.Report = string(uri.File(reportPath))
	}
	return r
}

// Summary is one line about a task's end: what it did and what it cost.
func Summary(res *agent.Result) string {
	took := res.Duration.Round(100 * time.Millisecond)
	var what string
	switch res.Status {
	case agent.StateCompleted:
		if len(res.Files) > 0 {
			names := make([]string, 0, len(res.Files))
			for i, f := range res.Files {
				if i == 5 {
					names = append(names, fmt.Sprintf("and %d more", len(res.Files)-5))
					break
				}
				names = append(names, f.Path)
			}
			what = fmt.Sprintf("completed in %s: changed %s", took, strings.Join(names, ", "))
			if answer := firstLineOf(res.Answer, 120); answer != "" {
				what += ": " + answer
			}
		} else {
			what = fmt.Sprintf("completed in %s: %s", took, firstLineOf(res.Answer, 120))
		}
	case agent.StateCancelled:
		what = fmt.Sprintf("cancelled after %s", took)
		if len(res.Files) > 0 {
			what += fmt.Sprintf(" (%d file(s) changed before)", len(res.Files))
		}
	default:
		what = fmt.Sprintf("failed (%s) after %s", res.StopReason, took)
		if res.Error != "" {
			what += ": " + firstLineOf(res.Error, 160)
		}
	}
	return fmt.Sprintf("%s [%d model calls, %d tokens]", what, res.ModelCalls, res.Usage.InputTokens+res.Usage.OutputTokens)
}

// firstLineOf is the first non-empty line of s, cut to n runes.
func firstLineOf(s string, n int) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#>*- "))
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > n {
			r := []rune(line)
			return string(r[:n-1]) + "…"
		}
		return line
	}
	return "(no answer)"
}

func (s *Service) entry(id string) (*taskEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tasks[id]
	if !ok {
		known := strings.Join(s.order, ", ")
		if known == "" {
			known = "none yet"
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "no task %q in this session (tasks: %s)", id, known)
	}
	return e, nil
}

// CancelReply is the reply of agentls.cancel.
type CancelReply struct {
	TaskID    string `json:"taskId"`
	Cancelled bool   `json:"cancelled"` // false when the task had already ended
	State     string `json:"state"`
}

func (s *Service) cancelCommand(_ context.Context, _ *Invocation, a TaskIDArgs) (any, error) {
	e, err := s.entry(a.TaskID)
	if err != nil {
		return nil, err
	}
	st := e.task.State()
	if st.Terminal() {
		return jsonReply(CancelReply{TaskID: e.id, Cancelled: false, State: string(st)})
	}
	e.cancel()
	s.log().Info("task cancelled", "task", e.id, "by", CommandCancel)
	return jsonReply(CancelReply{TaskID: e.id, Cancelled: true, State: string(e.task.State())})
}

// TaskList lists the session's tasks, oldest first.
func (s *Service) TaskList() []TaskInfo {
	s.mu.Lock()
	entries := make([]*taskEntry, 0, len(s.order))
	for _, id := range s.order {
		entries = append(entries, s.tasks[id])
	}
	s.mu.Unlock()
	out := make([]TaskInfo, 0, len(entries))
	for _, e := range entries {
		plan := e.task.Plan()
		pp := PlanProgress{Total: len(plan.Items), Items: []string{}}
		for _, it := range plan.Items {
			if it.Status == tools.PlanDone || it.Status == tools.PlanSkipped {
				pp.Done++
			}
			pp.Items = append(pp.Items, planLine(it))
		}
		e.mu.Lock()
		end := e.ended
		report := e.reportPath
		e.mu.Unlock()
		if end.IsZero() {
			end = time.Now()
		}
		info := TaskInfo{
			ID: e.id, Prompt: e.spec.Prompt, Mode: string(e.spec.Kind), State: string(e.task.State()),
			Plan: pp, Started: e.started.UTC().Truncate(time.Millisecond), Duration: end.Sub(e.started).Milliseconds(),
		}
		if report != "" {
			info.Report = string(uri.File(report))
		}
		out = append(out, info)
	}
	return out
}

// ReportReply is the reply of agentls.showReport.
type ReportReply struct {
	TaskID string `json:"taskId"`
	Report string `json:"report"` // file URI
	Shown  bool   `json:"shown"`  // window/showDocument succeeded
}

func (s *Service) showReportCommand(ctx context.Context, _ *Invocation, a TaskIDArgs) (any, error) {
	e, err := s.entry(a.TaskID)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	path, ended := e.reportPath, !e.ended.IsZero()
	e.mu.Unlock()
	switch {
	case !ended:
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: task %s is still running; its report is written when it ends", CommandShowReport, e.id)
	case path == "":
		return nil, jsonrpc2.Errorf(jsonrpc2.Code(protocol.LSPErrorCodesRequestFailed), "%s: the report of task %s could not be written (see the log)", CommandShowReport, e.id)
	}
	u := uri.File(path)
	shown := s.srv.showDocument(ctx, u)
	return jsonReply(ReportReply{TaskID: e.id, Report: string(u), Shown: shown})
}
