package lsp_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

func call(id, name string, args string) fakemodel.ToolCall {
	return fakemodel.ToolCall{ID: id, Name: name, Arguments: fakemodel.Args(args)}
}

// slow delays a model turn past the progress throttle, so the reports of
// each step are all sent.
const slow = fakemodel.Duration(150 * time.Millisecond)

var goFiles = map[string]string{
	"a.go": "package a\n\n// Foo greets.\nfunc Foo() string { return \"hello\" }\n",
	"b.go": "package a\n\nfunc Bar() int { return 1 }\n",
}

// TestRunAskEndToEnd: agentls.run over pipes with the real tools and the
// scripted model over HTTP: the reply's shape, progress with a title and
// a "reading" report, the summary message before the reply, the report.
func TestRunAskEndToEnd(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"a.go"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "func Foo"}, Delay: slow, Text: "Foo returns \"hello\".", FinishReason: "stop"},
	}, goFiles, lsptest.Config{WorkDoneProgress: true, ShowDocument: true}, agentOpts{settings: map[string]any{"showReport": true}})
	a.open(t, "a.go")
	r, err := a.run(t, map[string]any{"prompt": "What does Foo return?", "uri": string(uri.File(a.path("a.go"))),
		"range": map[string]any{"start": map[string]int{"line": 3, "character": 6}, "end": map[string]int{"line": 3, "character": 6}}})
	if err != nil {
		t.Fatal(err)
	}
	st := a.c.Snapshot() // the reply came last: everything before it is recorded
	if r.Status != "completed" || r.TaskID == "" || !strings.Contains(r.Answer, "hello") || r.LLMCalls != 2 ||
		r.StopReason != "answered" || len(r.ChangedFiles) != 0 || r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 {
		t.Errorf("reply = %+v", r)
	}
	if !strings.HasPrefix(r.Summary, "completed") {
		t.Errorf("summary = %q", r.Summary)
	}
	if !st.HasShowMessage(r.Summary) {
		t.Errorf("no showMessage with the summary before the reply: %+v", st.ShowMessages)
	}
	p := progressOf(&st, "agentls: What does Foo return?")
	if p == nil || !p.Ended() || p.End.Message == nil || *p.End.Message != r.Summary {
		t.Fatalf("progress = %+v; want begin titled after the prompt and an end with the summary", p)
	}
	if !strings.Contains(reportMessages(p), "reading a.go") {
		t.Errorf("reports %q; want one saying \"reading a.go\"", reportMessages(p))
	}
	// The report: written, named in the reply, shown (showReport: true).
	path := uri.URI(r.Report).FsPath()
	body, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".agentls/tasks/"+r.TaskID+".md") || !strings.Contains(string(body), "hello") {
		t.Errorf("report %s: %v\n%s", path, err, body)
	}
	if len(st.ShowDocuments) != 1 || string(st.ShowDocuments[0].URI) != r.Report {
		t.Errorf("showDocument = %+v; want the report", st.ShowDocuments)
	}
	// The editor context reached the model: file, line and the symbol.
	reqs := a.model.Requests()
	if first := string(reqs[0].Body); !strings.Contains(first, "a.go") || !strings.Contains(first, "Foo") {
		t.Errorf("first model request lacks the editor context: %.600s", first)
	}
	a.checkNoKey(t)
}

func TestRunEditThroughApplyEdit(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{
			call("p1", "update_plan", `{"items":[{"id":"1","text":"change the greeting","status":"in_progress"}]}`),
			call("c1", "read_file", `{"path":"a.go"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "func Foo"}, Delay: slow, ToolCalls: []fakemodel.ToolCall{call("c2", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Delay: slow, ToolCalls: []fakemodel.ToolCall{call("p2", "update_plan", `{"items":[{"id":"1","text":"change the greeting","status":"done"}]}`)}},
		{Text: "Foo now returns \"hi\".", FinishReason: "stop", Times: -1, Delay: slow},
	}, goFiles, lsptest.Config{WorkDoneProgress: true, ApplyEdit: true}, agentOpts{})
	a.open(t, "a.go")
	r, err := a.run(t, map[string]any{"prompt": "make Foo say hi"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "completed" || strings.Join(r.ChangedFiles, ",") != "a.go" {
		t.Fatalf("reply = %+v", r)
	}
	st := a.c.Snapshot()
	if len(st.AppliedEdits) != 1 || !st.AppliedEdits[0].Result.Applied {
		t.Fatalf("applied edits = %+v; want one applied workspace/applyEdit", st.AppliedEdits)
	}
	text, _, _ := a.c.Document(a.path("a.go"))
	if !strings.Contains(text, `"hi"`) {
		t.Errorf("editor buffer = %q", text)
	}
	disk, _ := os.ReadFile(a.path("a.go"))
	if strings.Contains(string(disk), `"hi"`) {
		t.Errorf("the open file was written to disk: %q", disk)
	}
	p := progressOf(&st, "agentls: make Foo say hi")
	msgs := reportMessages(p)
	for _, want := range []string{"[>] change the greeting", "[x] change the greeting", "editing a.go"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("progress reports lack %q:\n%s", want, msgs)
		}
	}
	last := p.Reports[len(p.Reports)-1]
	if last.Percentage == nil || *last.Percentage != 100 {
		t.Errorf("last report percentage = %v; want 100", last.Percentage)
	}
	body, _ := os.ReadFile(uri.URI(r.Report).FsPath())
	if !strings.Contains(string(body), `+func Foo() string { return "hi" }`) {
		t.Errorf("report lacks the diff:\n%s", body)
	}
	var list []lsp.TaskInfo
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandTasks, nil)
	if err != nil || json.Unmarshal(raw, &list) != nil || len(list) != 1 || list[0].ID != r.TaskID || list[0].State != "completed" ||
		list[0].Plan.Done != 1 || list[0].Plan.Total != 1 || list[0].Mode != "edit" {
		t.Errorf("agentls.tasks = %s, %v", raw, err)
	}
}
