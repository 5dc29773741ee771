package lsp_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

func diag(line uint32, msg string) protocol.Diagnostic {
	return protocol.Diagnostic{Range: protocol.Range{Start: protocol.Position{Line: line}, End: protocol.Position{Line: line, Character: 1}},
		Severity: protocol.DiagnosticSeverityError, Source: protocol.NewOptional("compiler"), Message: protocol.String(msg)}
}

// TestEditGetsOnlyTheErrorsItIntroduced: the editor reports an error in
// a.go before the task; after the agent's edit it reports that one and a
// new one. The edit's tool result names only the new error; the reply and
// the report list it as introduced.
func TestEditGetsOnlyTheErrorsItIntroduced(t *testing.T) {
	cfg := lsptest.Config{ApplyEdit: true, Diagnostics: func(u, text string, _ int32) []protocol.Diagnostic {
		ds := []protocol.Diagnostic{diag(0, "undefined: oldThing")}
		if strings.Contains(text, `"hi"`) {
			ds = append(ds, diag(3, "missing return"))
		}
		return ds
	}}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Foo says hi.", FinishReason: "stop"},
	}, goFiles, cfg, agentOpts{})
	a.open(t, "a.go")
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	reqs := a.model.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "new error(s) after this edit") || !strings.Contains(last, "a.go:4: missing return (compiler)") {
		t.Errorf("the edit's result does not name the new error")
	}
	if strings.Contains(last, "oldThing") {
		t.Errorf("the model was told of an error that was there before the task")
	}
	if strings.Join(r.IntroducedErrors, "|") != "a.go:4: missing return (compiler)" || len(r.FixedErrors) != 0 {
		t.Errorf("introduced %q, fixed %q", r.IntroducedErrors, r.FixedErrors)
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); !strings.Contains(rep, "Errors introduced:\n- a.go:4: missing return (compiler)") {
		t.Errorf("the report lacks the introduced error:\n%s", rep)
	}
}

// TestFixWithAgentWaitsForTheDiagnosticToGo: a "Fix with agent" task whose
// first edit leaves the diagnostic in place is not completed: the model is
// told the editor still reports it, edits again, and the task completes
// once the editor no longer reports it.
func TestFixWithAgentWaitsForTheDiagnosticToGo(t *testing.T) {
	const problem = "Foo must say hi"
	cfg := lsptest.Config{ApplyEdit: true, CodeActionLiterals: true, Diagnostics: func(u, text string, _ int32) []protocol.Diagnostic {
		if !strings.Contains(text, `"hi"`) {
			return []protocol.Diagnostic{diag(3, problem)}
		}
		return nil
	}}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hallo\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Fixed.", FinishReason: "stop"},
		{Match: &fakemodel.Match{LastUser: "still reports the problem"}, ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", `{"path":"a.go","old_string":"\"hallo\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Fixed: Foo says hi.", FinishReason: "stop"},
	}, goFiles, cfg, agentOpts{})
	a.open(t, "a.go")
	var fix *lsp.RunArgs
	for _, raw := range codeAction(t, a, "a.go", 3, 0, 3, 10, []protocol.Diagnostic{diag(3, problem)}) {
		var x struct {
			Title   string `json:"title"`
			Command struct {
				Arguments []lsp.RunArgs `json:"arguments"`
			} `json:"command"`
		}
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(x.Title, "Fix with agent") {
			fix = &x.Command.Arguments[0]
		}
	}
	if fix == nil {
		t.Fatal("no Fix with agent action")
	}
	r, err := a.run(t, fix)
	if err != nil || r.Status != "completed" || r.LLMCalls != 4 {
		t.Fatalf("reply = %+v, %v; want completed after 4 calls", r, err)
	}
	if text, _, _ := a.c.Document(a.path("a.go")); !strings.Contains(text, `"hi"`) {
		t.Errorf("a.go = %q", text)
	}
}

// twoEdits is a task that edits a.go twice, then answers.
func twoEdits() []fakemodel.Turn {
	return []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Times: 1, ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", `{"path":"a.go","old_string":"\"hi\"","new_string":"\"hi2\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Foo says hi2.", FinishReason: "stop"},
	}
}

// TestEditWithoutDiagnosticsSourceDoesNotWait: the plugin says no language
// server checks a.go (no gopls in the editor): the edits do not wait for
// diagnostics (3 s each before), and the report says "not checked", not
// "no error introduced".
func TestEditWithoutDiagnosticsSourceDoesNotWait(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	cfg := lsptest.Config{ApplyEdit: true,
		Diagnostics: func(string, string, int32) []protocol.Diagnostic { return nil },
		DiagnosticsUnchecked: func(string) bool {
			mu.Lock()
			asked++
			mu.Unlock()
			return true
		}}
	a := newAgentSession(t, twoEdits(), goFiles, cfg, agentOpts{})
	a.open(t, "a.go")
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi2", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	mu.Lock()
	n := asked
	mu.Unlock()
	// Waiting polls every 250 ms for 3 s after each edit (about 24
	// requests); with nothing to wait for, each edit asks once or twice.
	if n > 4 {
		t.Errorf("the 2 edits asked for diagnostics %d times; want at most 4 (no wait when nothing checks a.go)", n)
	}
	rep := readFile(t, strings.TrimPrefix(r.Report, "file://"))
	if !strings.Contains(rep, "Not checked: no language server reports diagnostics for a.go") {
		t.Errorf("the report does not say a.go was not checked:\n%s", rep)
	}
	if strings.Contains(rep, "No error introduced") {
		t.Errorf("the report claims no error was introduced although nothing checked a.go:\n%s", rep)
	}
}

// TestCleanEditDoesNotStopLaterWaits: a client that sends neither versions
// nor checked (VS Code) and reports nothing for a clean edit is still
// waited for at the next edit: nothing reported for clean text cannot be
// told from nothing checking the file, and not waiting would hide the
// errors a later edit brings (a slow server reports them after the edit).
func TestCleanEditDoesNotStopLaterWaits(t *testing.T) {
	var mu sync.Mutex
	afterSecond := 0
	cfg := lsptest.Config{ApplyEdit: true, DiagnosticsUnversioned: true,
		Diagnostics: func(_ string, text string, _ int32) []protocol.Diagnostic {
			if strings.Contains(text, `"hi2"`) {
				mu.Lock()
				afterSecond++
				mu.Unlock()
			}
			return nil
		}}
	a := newAgentSession(t, twoEdits(), goFiles, cfg, agentOpts{})
	a.open(t, "a.go")
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi2", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	mu.Lock()
	n := afterSecond
	mu.Unlock()
	// Waiting polls every 250 ms for up to 3 s: the second edit asks again
	// and again, as the first did.
	if n <= 2 {
		t.Errorf("the second edit asked for diagnostics %d times; want it to wait as the first did (more than 2)", n)
	}
}
