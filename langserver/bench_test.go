package langserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// benchFiles is a module where Greet is declared in greet/greet.go and
// called from 10 files, each also mentioning Greet in a comment and a
// string; Total is called from 3 of them and named in 10 comments.
func benchFiles(t testing.TB) string {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/bench\n\ngo 1.22\n")
	write("greet/greet.go", "package greet\n\n// Greet greets.\nfunc Greet(name string) string { return \"Greet \" + name }\n\n// Total adds.\nfunc Total(xs ...int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n")
	for i := range 10 {
		call := ""
		if i < 3 {
			call = fmt.Sprintf("\n\n// Sum%d is not Total.\nfunc Sum%d() int { return greet.Total(%d, 1) }", i, i, i)
		}
		write(fmt.Sprintf("app/f%d.go", i), fmt.Sprintf(`package app

import "example.com/bench/greet"

// Hi%d calls Greet; the Total of the greeting is not counted.
func Hi%d() string {
	// "Greet" below is a call, this comment is not.
	return greet.Greet("file %d: Greet")
}%s
`, i, i, i, call))
	}
	return dir
}

// benchPort is a face without an editor: edits land on disk, approvals
// are never asked (approval auto).
type benchPort struct{ session.Unsupported }

func (benchPort) Event(agent.Event)                            {}
func (benchPort) Editor(*workspace.Workspace) workspace.Editor { return nil }
func (benchPort) AskUser(context.Context, permission.Request) (tools.Decision, error) {
	return tools.AllowOnce, nil
}

func tc(id, name, args string) fakemodel.ToolCall {
	return fakemodel.ToolCall{ID: id, Name: name, Arguments: fakemodel.Args(args)}
}

// benchCase is one task scripted the two ways a model does it.
type benchCase struct {
	name, prompt string
	kind         agent.Kind
	turns        []fakemodel.Turn
	withTools    bool
}

func benchCases() []benchCase {
	var edits []fakemodel.ToolCall
	edits = append(edits, tc("e", "edit_file", `{"path":"greet/greet.go","old_string":"func Greet(","new_string":"func Hello("}`))
	for i := range 10 {
		edits = append(edits, tc(fmt.Sprintf("e%d", i), "edit_file", fmt.Sprintf(`{"path":"app/f%d.go","old_string":"greet.Greet(","new_string":"greet.Hello("}`, i)))
	}
	return []benchCase{
		{name: "rename/with", prompt: "rename Greet to Hello everywhere", kind: agent.KindEdit, withTools: true, turns: []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{tc("c1", "rename_symbol", `{"file":"greet/greet.go","symbol":"Greet","new_name":"Hello"}`)}},
			{Match: &fakemodel.Match{LastToolResult: "renamed Greet to Hello"}, Text: "Greet is now Hello in 11 files.", FinishReason: "stop"},
		}},
		// Without the tools a careful model greps (the hits include comments
		// and strings), edits every call site, and builds to check.
		{name: "rename/without", prompt: "rename Greet to Hello everywhere", kind: agent.KindEdit, turns: []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{tc("c1", "grep", `{"pattern":"\\bGreet\\b"}`)}},
			{Match: &fakemodel.Match{LastToolResult: "app/f9.go"}, ToolCalls: edits},
			{Match: &fakemodel.Match{LastToolResult: "edited app/f9.go"}, ToolCalls: []fakemodel.ToolCall{tc("c3", "run_command", `{"command":"go build ./..."}`)}},
			{Match: &fakemodel.Match{LastToolResult: "exit code"}, Text: "Greet is now Hello in 11 files.", FinishReason: "stop"},
		}},
		{name: "callers/with", prompt: "who calls Total?", kind: agent.KindAsk, withTools: true, turns: []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{tc("c1", "references", `{"file":"greet/greet.go","symbol":"Total"}`)}},
			{Match: &fakemodel.Match{LastToolResult: "references of Total"}, Text: "Sum0, Sum1 and Sum2 call Total.", FinishReason: "stop"},
		}},
		// Without them: grep finds the word in 13 places, and the model reads
		// the files to tell calls from comments.
		{name: "callers/without", prompt: "who calls Total?", kind: agent.KindAsk, turns: []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{tc("c1", "grep", `{"pattern":"\\bTotal\\b"}`)}},
			{Match: &fakemodel.Match{LastToolResult: "app/f9.go"}, ToolCalls: []fakemodel.ToolCall{
				tc("r0", "read_file", `{"path":"app/f0.go"}`), tc("r1", "read_file", `{"path":"app/f1.go"}`), tc("r2", "read_file", `{"path":"app/f2.go"}`)}},
			{Match: &fakemodel.Match{LastToolResult: "Sum2"}, Text: "Sum0, Sum1 and Sum2 call Total.", FinishReason: "stop"},
		}},
	}
}

// runBench runs one case through a host and returns its result.
func runBench(t testing.TB, c benchCase) *agent.Result {
	model, err := fakemodel.Start(fakemodel.Script{Turns: c.turns})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	settings := session.Defaults()
	settings.BaseURL, settings.Model, settings.Validate, settings.Approval = model.URL(), "test-model", "off", "auto"
	opts := session.Options{Getenv: func(k string) string {
		if k == session.EnvAPIKey {
			return "test-key"
		}
		return ""
	}, DBPath: filepath.Join(t.TempDir(), "agentls.db")}
	if c.withTools {
		opts.LanguageServers = NewServers()
	}
	h := session.New(settings, opts)
	defer h.Close()
	h.SetRoots([]string{benchFiles(t)})
	out, err := h.Run(context.Background(), agent.TaskSpec{Kind: c.kind, Prompt: c.prompt}, benchPort{})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if r.Status != agent.StateCompleted {
		t.Fatalf("%s: %s (%s): %s", c.name, r.Status, r.StopReason, r.Error)
	}
	for name, st := range r.Tools {
		if st.Errors > 0 {
			t.Fatalf("%s: %d failed %s call(s)", c.name, st.Errors, name)
		}
	}
	return r
}

// BenchmarkLanguageTools reports, per task, the model calls and tokens of
// the scripted model with and without the language tools (gopls):
//
//	go test -run '^$' -bench LanguageTools -benchtime 1x ./langserver/
func BenchmarkLanguageTools(b *testing.B) {
	needGopls(b)
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			var r *agent.Result
			for b.Loop() {
				r = runBench(b, c)
			}
			b.ReportMetric(float64(r.ModelCalls), "model-calls")
			b.ReportMetric(float64(r.Usage.InputTokens), "input-tokens")
			b.ReportMetric(float64(r.Usage.OutputTokens), "output-tokens")
			var calls []string
			for name, st := range r.Tools {
				calls = append(calls, fmt.Sprintf("%s×%d", name, st.Calls))
			}
			b.Logf("%s: %d model calls, %d input + %d output tokens; tools %s", c.name, r.ModelCalls, r.Usage.InputTokens, r.Usage.OutputTokens, strings.Join(calls, " "))
		})
	}
}
