package lsp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// greetFiles is the Go module of langserver/testdata/greet.txtar: Greet
// used across packages, Total with three callers, both names also in
// comments and strings.
func greetFiles(t *testing.T) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		t.Fatalf("gopls is not on PATH: run make install: %v", err)
	}
	ar, err := txtar.ParseFile("../langserver/testdata/greet.txtar")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range ar.Files {
		files[f.Name] = string(f.Data)
	}
	return files
}

// TestRenameSymbolThroughAPlainClient: a plain LSP client (no plugin),
// agentls's own gopls: "rename Greet to Hello everywhere" is one
// rename_symbol call and no edit_file call, the module builds afterwards,
// and agentls.undo reverts it in one step.
func TestRenameSymbolThroughAPlainClient(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "rename_symbol", `{"file":"greet/greet.go","symbol":"Greet","new_name":"Hello"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "renamed Greet to Hello via gopls"}, Text: "Greet is now Hello everywhere.", FinishReason: "stop"},
	}, greetFiles(t), lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "rename Greet to Hello everywhere", "mode": "edit"})
	if err != nil || r.Status != "completed" || r.LLMCalls != 2 {
		t.Fatalf("reply = %+v, %v; want completed after 2 model calls", r, err)
	}
	if got := strings.Join(r.ChangedFiles, ","); got != "greet/greet.go,main.go" {
		t.Errorf("changedFiles = %q; want greet/greet.go,main.go", got)
	}
	for _, req := range a.model.Requests() {
		if strings.Contains(string(req.Body), `"name":"edit_file","arguments"`) {
			t.Errorf("an edit_file call was made")
		}
	}
	build := exec.Command("go", "build", "./...")
	build.Dir = a.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build after the rename: %v\n%s", err, out)
	}
	if b := readFile(t, a.path("main.go")); !strings.Contains(b, "greet.Hello(") || !strings.Contains(b, `"Total"`) {
		t.Errorf("main.go after the rename:\n%s", b)
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); !strings.Contains(rep, "rename_symbol") || !strings.Contains(rep, "main.go") {
		t.Errorf("the report does not list the rename and its files:\n%s", rep)
	}
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandUndo, map[string]string{"taskId": r.TaskID})
	var u lsp.UndoReply
	if err != nil || json.Unmarshal(raw, &u) != nil || len(u.Reverted) != 2 {
		t.Fatalf("agentls.undo = %s, %v; want both files reverted in one step", raw, err)
	}
	if b, _ := os.ReadFile(a.path("greet/greet.go")); !strings.Contains(string(b), "func Greet(") {
		t.Errorf("greet.go after undo:\n%s", b)
	}
}

// TestWhoCallsTotalThroughAPlainClient: "who calls Total?" is answered
// from one references call, listing the three calls and neither the
// comment nor the string that mention Total.
func TestWhoCallsTotalThroughAPlainClient(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "references", `{"file":"order/total.go","symbol":"Total"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "references of Total"}, Text: "Summary, Average and TotalTax call Total.", FinishReason: "stop"},
	}, greetFiles(t), lsptest.Config{}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "who calls Total?", "mode": "ask"})
	if err != nil || r.Status != "completed" || r.LLMCalls != 2 {
		t.Fatalf("reply = %+v, %v; want completed after 2 model calls", r, err)
	}
	reqs := a.model.Requests()
	last := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"via gopls: 3 in 2 file(s)", "order/summary.go", "6: return fmt.Sprintf", "13: return Total(prices) / len(prices)", "order/total.go", "13: func TotalTax"} {
		if !strings.Contains(last, want) {
			t.Errorf("the references result lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(last, `main.go\n`) || strings.Contains(last, "Total is printed") {
		t.Errorf("the references result lists a comment or string mention")
	}
}
