package lsp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	sess "github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

func answer(title string) func(protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
	return func(p protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
		for _, a := range p.Actions {
			if strings.HasPrefix(a.Title, title) {
				return &protocol.MessageActionItem{Title: a.Title}
			}
		}
		return nil
	}
}

// TestApprovals: run_command asks through window/showMessageRequest unless
// the configuration or the workspace settings allow it; a denial (or no
// answer) is a clear result the model reads, and the task goes on.
func TestApprovals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		settings  map[string]any
		command   string
		answer    func(protocol.ShowMessageRequestParams) *protocol.MessageActionItem
		timeout   time.Duration
		wantAsked int
		wantTool  string // in the tool result the model reads
	}{
		{"allow once", map[string]any{"approval": "ask"}, "ls -a", answer(lsp.ActionAllowOnce), 0, 1, "exit code 0"},
		{"deny", map[string]any{"approval": "ask"}, "ls -a", answer(lsp.ActionDeny), 0, 1, "the user denied"},
		{"dismissed", map[string]any{"approval": "ask"}, "ls -a", nil, 0, 1, "the user denied"},
		{"no answer in time", map[string]any{"approval": "ask"}, "ls -a", func(p protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
			time.Sleep(time.Second)
			return answer(lsp.ActionAllowOnce)(p)
		}, 100 * time.Millisecond, 1, "could not ask the user"},
		{"allowCommands prefix", map[string]any{"approval": "ask", "allowCommands": []string{"ls"}}, "ls -a", nil, 0, 0, "exit code 0"},
		{"allowCommands never covers a chain", map[string]any{"approval": "ask", "allowCommands": []string{"ls"}}, "ls -a; echo x > f", answer(lsp.ActionDeny), 0, 1, "the user denied"},
		{"approval auto", map[string]any{"approval": "auto"}, "ls -a", nil, 0, 0, "exit code 0"},
		{"approval deny", map[string]any{"approval": "deny"}, "ls -a", nil, 0, 0, "the user denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, _ := json.Marshal(map[string]string{"command": tc.command})
			a := newAgentSession(t, []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", string(cmd))}},
				{Text: "Finished.", FinishReason: "stop", Times: -1},
			}, goFiles, lsptest.Config{WorkDoneProgress: true, ShowMessageRequest: tc.answer}, agentOpts{settings: tc.settings, svc: lsp.ServiceOptions{ApprovalTimeout: tc.timeout}})
			r, err := a.run(t, map[string]any{"prompt": "list the files with ls", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("reply = %+v, %v; the task must go on after a denial", r, err)
			}
			st := a.c.Snapshot()
			if len(st.MessageRequests) != tc.wantAsked {
				t.Errorf("asked %d times; want %d", len(st.MessageRequests), tc.wantAsked)
			}
			if len(st.MessageRequests) > 0 {
				var titles []string
				for _, act := range st.MessageRequests[0].Actions {
					titles = append(titles, act.Title)
				}
				want := "Allow once|Allow for this task|Always allow `ls`|Deny"
				if tc.command != "ls -a" {
					// A chain is never offered as a prefix to remember.
					want = "Allow once|Allow for this task|Deny"
				}
				if strings.Join(titles, "|") != want || !strings.Contains(st.MessageRequests[0].Message, tc.command) {
					t.Errorf("question %q with %q", st.MessageRequests[0].Message, titles)
				}
			}
			reqs := a.model.Requests()
			if len(reqs) < 2 || !strings.Contains(string(reqs[1].Body), tc.wantTool) {
				t.Errorf("the model's tool result lacks %q", tc.wantTool)
			}
		})
	}
}

// TestAlwaysAllowIsRemembered: "Always allow `ls`" writes the prefix to
// the user's configuration folder, keyed by the workspace root, never into
// the workspace; the next task runs ls without asking.
func TestAlwaysAllowIsRemembered(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"ls -a"}`)}, Times: 2},
		{Match: &fakemodel.Match{LastToolResult: "exit code"}, Text: "Finished.", FinishReason: "stop", Times: -1},
	}, goFiles, lsptest.Config{ShowMessageRequest: answer(lsp.ActionAlwaysPrefix)}, agentOpts{settings: map[string]any{"approval": "ask"}})
	for i := 0; i < 2; i++ {
		if r, err := a.run(t, map[string]any{"prompt": "run ls", "mode": "edit"}); err != nil || r.Status != "completed" {
			t.Fatalf("run %d: %+v, %v", i, r, err)
		}
	}
	if n := len(a.c.Snapshot().MessageRequests); n != 1 {
		t.Errorf("asked %d times; want once", n)
	}
	if got, err := sess.RememberedCommands(a.root); err != nil || strings.Join(got, ",") != "ls" {
		t.Errorf("remembered commands = %q, %v; want [ls]", got, err)
	}
	if _, err := os.Stat(filepath.Join(a.root, ".agentls", sess.SettingsFileName)); err == nil {
		t.Errorf("the answer was written into the workspace's .agentls/%s", sess.SettingsFileName)
	}
	// The report lists the command with its exit code.
	list := a.svc.TaskList()
	body := readFile(t, uri.URI(list[1].Report).FsPath())
	if !strings.Contains(body, "## Commands run") || !strings.Contains(body, "`ls -a`") || !strings.Contains(body, "exit code 0") {
		t.Errorf("report:\n%s", body)
	}
}

// TestWriteToAFileNotOpenAsks: write_file to a file the editor does not
// have open asks first; a denial leaves the disk alone.
func TestWriteToAFileNotOpenAsks(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "write_file", `{"path":"new.go","content":"package a\n"}`)}},
		{Text: "Could not write it.", FinishReason: "stop", Times: -1},
	}, goFiles, lsptest.Config{ShowMessageRequest: answer(lsp.ActionDeny)}, agentOpts{settings: map[string]any{"approval": "ask"}})
	r, err := a.run(t, map[string]any{"prompt": "create new.go", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("%+v, %v", r, err)
	}
	st := a.c.Snapshot()
	if len(st.MessageRequests) != 1 || !strings.Contains(st.MessageRequests[0].Message, "create new.go") {
		t.Errorf("questions = %+v", st.MessageRequests)
	}
	if _, err := os.Stat(a.path("new.go")); err == nil {
		t.Errorf("new.go was written after a denial")
	}
	// The task ends "completed" (the model answered), and says what was refused.
	if !strings.Contains(r.Summary, "(denied: create new.go") {
		t.Errorf("summary %q does not say the write was denied", r.Summary)
	}
}

// TestNoAPIKeyFailsFast: without a key (and a remote base URL) agentls.run
// fails at once with an error, and a message, saying how to set it.
func TestNoAPIKeyFailsFast(t *testing.T) {
	a := newAgentSession(t, nil, goFiles, lsptest.Config{WorkDoneProgress: true}, agentOpts{noKey: true, settings: map[string]any{"baseURL": "https://api.example.com/v1"}})
	start := time.Now()
	_, err := a.run(t, map[string]any{"prompt": "what is Foo?"})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "apiKeyEnv") {
		t.Fatalf("error = %v; want one saying how to set the key", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v; want a fast failure", took)
	}
	if st := a.c.Snapshot(); !st.HasShowMessage("OPENAI_API_KEY") {
		t.Errorf("no showMessage about the key")
	}
	if len(a.model.Requests()) != 0 {
		t.Errorf("the model was called")
	}
}

// TestModelConfigChangeRebuildsTheClient: a changed model setting applies
// from the next task (the request carries the new model and temperature).
func TestModelConfigChangeRebuildsTheClient(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{{Text: "Answer.", FinishReason: "stop", Times: -1}}, goFiles, lsptest.Config{}, agentOpts{})
	if _, err := a.run(t, map[string]any{"prompt": "what is Foo?"}); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{"agentls": map[string]any{"model": "other-model", "temperature": 0, "maxCompletionTokens": 77, "extraBody": map[string]any{"top_k": 20}}}
	raw, _ := json.Marshal(settings)
	if err := a.c.Notify(ctx(t), protocol.MethodWorkspaceDidChangeConfiguration, &protocol.DidChangeConfigurationParams{Settings: raw}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(2*time.Second, func() bool { return a.svc.Host().Settings().Model == "other-model" }) {
		t.Fatal("configuration not applied")
	}
	if _, err := a.run(t, map[string]any{"prompt": "what is Bar?"}); err != nil {
		t.Fatal(err)
	}
	reqs := a.model.Requests()
	first, last := string(reqs[0].Body), string(reqs[len(reqs)-1].Body)
	if !strings.Contains(first, `"model":"test-model"`) || strings.Contains(first, "temperature") {
		t.Errorf("first request: %.300s", first)
	}
	for _, want := range []string{`"model":"other-model"`, `"temperature":0`, `"max_completion_tokens":77`, `"top_k":20`} {
		if !strings.Contains(last, want) {
			t.Errorf("request after the change lacks %s: %.400s", want, last)
		}
	}
}

// TestCommandArgumentErrors: malformed arguments and unknown commands get
// InvalidParams saying what was expected.
func TestCommandArgumentErrors(t *testing.T) {
	a := newAgentSession(t, nil, goFiles, lsptest.Config{}, agentOpts{})
	for _, tc := range []struct {
		command string
		arg     any
		want    string
	}{
		{lsp.CommandRun, map[string]any{}, `"prompt" must be a non-empty string`},
		{lsp.CommandRun, map[string]any{"prompt": "x", "mode": "write"}, `"mode" must be "ask", "edit" or "plan"`},
		{lsp.CommandRun, map[string]any{"prompt": "x", "promt": "y"}, `unknown field "promt"`},
		{lsp.CommandRun, map[string]any{"prompt": "x", "range": map[string]any{}}, `"range" needs "uri"`},
		{lsp.CommandRun, map[string]any{"prompt": "x", "followUp": "nope"}, `"nope"`},
		{lsp.CommandRun, "just a string", "must be a JSON object"},
		{lsp.CommandRun, map[string]any{"prompt": "x", "uri": "file:///etc/passwd"}, "is not in the workspace"},
		{lsp.CommandRun, map[string]any{"prompt": "x", "uri": "untitled:Untitled-1"}, "is not a file URI"},
		{lsp.CommandRun, map[string]any{"prompt": "x", "uri": "file:///etc/passwd", "range": map[string]any{"start": map[string]int{"line": 2}, "end": map[string]int{"line": 1}}}, `"range" ends before it starts`},
		{lsp.CommandCancel, map[string]any{}, `"taskId" must be a non-empty string`},
		{lsp.CommandCancel, map[string]any{"taskId": "nope"}, `invalid task id "nope"`},
		{lsp.CommandCancel, map[string]any{"taskId": "00000000-1"}, `no task "00000000-1"`},
		{lsp.CommandShowReport, map[string]any{"taskId": "../../x"}, `invalid task id "../../x"`},
		{lsp.CommandShowReport, map[string]any{"taskId": "/etc/passwd"}, `invalid task id`},
		{lsp.CommandShowReport, map[string]any{"taskId": "00000000-1\u0000"}, `invalid task id`},
		{lsp.CommandShowReport, map[string]any{"taskId": strings.Repeat("a", 100000)}, `invalid task id`},
		{lsp.CommandResult, map[string]any{"taskId": "../x"}, `invalid task id`},
		{lsp.CommandResume, map[string]any{"taskId": "../../x"}, `invalid task id`},
		{lsp.CommandUndo, map[string]any{"taskId": "..\\x"}, `invalid task id`},
		{lsp.CommandRun, map[string]any{"prompt": "x", "followUp": "../../x"}, `invalid task id`},
		{lsp.CommandShowReport, map[string]any{"task": "x"}, `unknown field "task"`},
		{lsp.CommandTasks, map[string]any{"x": 1}, `unknown field "x"`},
		{"agentls.nope", nil, `unknown command "agentls.nope"`},
	} {
		_, _, err := a.c.ExecuteCommand(ctx(t), tc.command, tc.arg)
		if code(err) != jsonrpc2.InvalidParams || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v (code %d); want InvalidParams with %q", tc.command, tc.arg, err, code(err), tc.want)
		}
		if tc.command == lsp.CommandRun && !strings.Contains(err.Error(), "expected {\"prompt\": string") && !strings.Contains(err.Error(), "nope") && !strings.Contains(err.Error(), "not in the workspace (") {
			t.Errorf("%s: error %v does not say what is expected", tc.command, err)
		}
	}
}

// TestFallbackClientGetsMessages: a client without work-done progress
// (eglot, ALE) gets window/showMessage at the start and at the end, the
// end before the reply.
func TestFallbackClientGetsMessages(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{{Text: "It returns hello.", FinishReason: "stop"}}, goFiles, lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "What does Foo return?"})
	if err != nil {
		t.Fatal(err)
	}
	st := a.c.Snapshot()
	if len(st.Progress) != 0 || len(st.ShowMessages) != 2 ||
		!strings.HasPrefix(st.ShowMessages[0].Message, "agentls: What does Foo return?") ||
		!strings.Contains(st.ShowMessages[1].Message, r.Summary) {
		t.Errorf("messages = %+v; want a start and an end with the summary", st.ShowMessages)
	}
}

// TestCreateNeverAnswered: a client that declares progress but never
// answers window/workDoneProgress/create still gets its task run, with
// messages instead of progress.
func TestCreateNeverAnswered(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{{Text: "It returns hello.", FinishReason: "stop"}}, goFiles,
		lsptest.Config{WorkDoneProgress: true, Create: lsptest.CreateIgnore}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "What does Foo return?"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("%+v, %v", r, err)
	}
	if st := a.c.Snapshot(); !st.HasShowMessage(r.Summary) {
		t.Errorf("no end message: %+v", st.ShowMessages)
	}
}

// TestShowReport: agentls.showReport returns the report's URI and opens it.
func TestShowReport(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{{Text: "It returns hello.", FinishReason: "stop"}}, goFiles, lsptest.Config{ShowDocument: true}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "What does Foo return?"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(a.c.Snapshot().ShowDocuments); n != 0 {
		t.Errorf("report shown without showReport: %d", n)
	}
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandShowReport, map[string]string{"taskId": r.TaskID})
	var rep lsp.ReportReply
	if err != nil || json.Unmarshal(raw, &rep) != nil || rep.Report != r.Report || !rep.Shown {
		t.Fatalf("showReport = %s, %v", raw, err)
	}
	if docs := a.c.Snapshot().ShowDocuments; len(docs) != 1 || string(docs[0].URI) != r.Report {
		t.Errorf("showDocument = %+v", docs)
	}
}

// TestCodeActions: the three kinds of agent code actions, built from the
// open buffer, with the arguments agentls.run takes.
func TestCodeActions(t *testing.T) {
	a := newAgentSession(t, nil, goFiles, lsptest.Config{CodeActionLiterals: true}, agentOpts{})
	a.open(t, "a.go")
	diag := protocol.Diagnostic{Range: protocol.Range{Start: protocol.Position{Line: 3, Character: 0}, End: protocol.Position{Line: 3, Character: 4}},
		Severity: protocol.DiagnosticSeverityError, Source: protocol.NewOptional("compiler"), Message: protocol.String("missing return")}
	type action struct {
		Title       string
		Kind        string
		Diagnostics []json.RawMessage
		Command     struct {
			Command   string
			Arguments []lsp.RunArgs
		}
	}
	decode := func(raws []json.RawMessage) []action {
		out := make([]action, len(raws))
		for i, r := range raws {
			if err := json.Unmarshal(r, &out[i]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	// Cursor inside "Foo" (line 3 "func Foo() ..."), no selection.
	acts := decode(codeAction(t, a, "a.go", 3, 6, 3, 6, nil))
	if len(acts) != 1 || acts[0].Title != "Ask agent about `Foo`" || acts[0].Command.Command != lsp.CommandRun ||
		acts[0].Command.Arguments[0].Mode != "ask" || acts[0].Command.Arguments[0].URI != string(lsptest.FileURI(a.path("a.go"))) {
		t.Errorf("cursor actions = %+v", acts)
	}
	// A selection with a diagnostic.
	acts = decode(codeAction(t, a, "a.go", 2, 0, 3, 10, []protocol.Diagnostic{diag}))
	var titles []string
	for _, x := range acts {
		titles = append(titles, x.Title+"/"+x.Kind)
	}
	if strings.Join(titles, "|") != "Explain selection with agent/|Fix with agent: missing return/quickfix|Plan with agent: missing return/quickfix" {
		t.Errorf("titles = %q", titles)
	}
	if plan := acts[len(acts)-1].Command.Arguments[0]; plan.Mode != "plan" || len(plan.Diagnostics) != 1 {
		t.Errorf("plan action = %+v", plan)
	}
	fix := acts[len(acts)-2]
	if args := fix.Command.Arguments[0]; args.Mode != "edit" || len(args.Diagnostics) != 1 || args.Diagnostics[0].Text() != "missing return" ||
		args.Diagnostics[0].Source != "compiler" || len(fix.Diagnostics) != 1 {
		t.Errorf("fix action = %+v", fix)
	}
	// A file that is not open: nothing (no disk read).
	if acts := codeAction(t, a, "b.go", 0, 0, 0, 0, nil); len(acts) != 0 {
		t.Errorf("actions for a file not open: %s", acts)
	}
}

// TestFixActionRunsWithTheDiagnostic: the arguments a "Fix with agent"
// action carries run as they are, and the model sees the diagnostic.
func TestFixActionRunsWithTheDiagnostic(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{{Text: "Fixed nothing.", FinishReason: "stop", Times: -1}}, goFiles, lsptest.Config{CodeActionLiterals: true}, agentOpts{})
	a.open(t, "a.go")
	diag := protocol.Diagnostic{Range: protocol.Range{Start: protocol.Position{Line: 3, Character: 5}, End: protocol.Position{Line: 3, Character: 8}},
		Severity: protocol.DiagnosticSeverityWarning, Message: protocol.String("Foo is unused")}
	raws := codeAction(t, a, "a.go", 3, 5, 3, 8, []protocol.Diagnostic{diag})
	var act struct {
		Command struct {
			Arguments []json.RawMessage
		}
	}
	if err := json.Unmarshal(raws[len(raws)-1], &act); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandRun, act.Command.Arguments[0]); err != nil {
		t.Fatal(err)
	}
	if body := string(a.model.Requests()[0].Body); !strings.Contains(body, "Foo is unused") || !strings.Contains(body, "a.go") {
		t.Errorf("the model did not get the diagnostic: %.500s", body)
	}
}

// TestUnansweredApprovalDeniesLaterQuestionsAtOnce: a client that never
// answers window/showMessageRequest (ALE) is asked once; after that
// question times out, later approvals are denied without asking (no
// second full timeout), the model reads why, and the user is told once how
// to allow them.
func TestUnansweredApprovalDeniesLaterQuestionsAtOnce(t *testing.T) {
	never := func(protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
		time.Sleep(2 * time.Second)
		return nil
	}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"ls -a"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "could not ask the user"}, ToolCalls: []fakemodel.ToolCall{call("c2", "run_command", `{"command":"ls -l"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "did not answer an earlier approval question"}, Text: "Could not run it.", FinishReason: "stop"},
	}, goFiles, lsptest.Config{ShowMessageRequest: never}, agentOpts{settings: map[string]any{"approval": "ask"}, svc: lsp.ServiceOptions{ApprovalTimeout: 150 * time.Millisecond}})
	r, err := a.run(t, map[string]any{"prompt": "list the files with ls", "mode": "edit"})
	if err != nil || r.Status != "completed" || r.LLMCalls != 3 {
		t.Fatalf("reply = %+v, %v; want the task to go on after both denials", r, err)
	}
	st := a.c.Snapshot()
	if len(st.MessageRequests) != 1 {
		t.Errorf("asked %d times; want once", len(st.MessageRequests))
	}
	n := 0
	for _, m := range st.ShowMessages {
		if strings.Contains(m.Message, "did not answer an approval question") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d messages about the unanswered question; want 1: %+v", n, st.ShowMessages)
	}
}

// TestWrongModelSummaryKeepsTheServiceWords: a wrong model name fails the
// task; the summary the editors show carries the service's own message
// (not only the report) and the fix.
func TestWrongModelSummaryKeepsTheServiceWords(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{Status: 404, Body: `{"error": {"message": "The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.", "type": "invalid_request_error", "code": "model_not_found"}}`, Times: -1},
	}, goFiles, lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "what is Foo?", "mode": "ask"})
	if err != nil || r.Status != "failed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	for _, want := range []string{"does not exist or you do not have access", "check agentls.model"} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("summary %q lacks %q", r.Summary, want)
		}
	}
}
