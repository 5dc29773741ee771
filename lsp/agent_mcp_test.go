package lsp_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// asked records the approval questions the editor saw and answers each
// with the first action whose title starts with the answer its message
// picks.
type asked struct {
	mu   sync.Mutex
	msgs []protocol.ShowMessageRequestParams
	pick func(msg string) string
}

func (a *asked) answer(p protocol.ShowMessageRequestParams) *protocol.MessageActionItem {
	a.mu.Lock()
	a.msgs = append(a.msgs, p)
	a.mu.Unlock()
	want := a.pick(p.Message)
	for _, act := range p.Actions {
		if strings.HasPrefix(act.Title, want) {
			return &protocol.MessageActionItem{Title: act.Title}
		}
	}
	return nil
}

func (a *asked) messages() []protocol.ShowMessageRequestParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]protocol.ShowMessageRequestParams(nil), a.msgs...)
}

// TestMCPToolFromTheEditor: a task through agentls.run calls a tool of a
// real MCP server (the Go SDK server of tools/mcp/testdata, from the
// user's mcpServers setting): the model sees mcp__test__echo with its
// schema, the editor is asked once (allowed for the task), the server's
// answer reaches the model, and the report lists the call.
func TestMCPToolFromTheEditor(t *testing.T) {
	bin := lsptest.MCPTestServer(t)
	q := &asked{pick: func(string) string { return lsp.ActionAllowForTask }}
	a := newAgentSession(t, []fakemodel.Turn{
		{Match: &fakemodel.Match{LastToolResult: "echo: second"}, Text: "The server echoed twice.", FinishReason: "stop"},
		{Match: &fakemodel.Match{LastToolResult: "echo: from the editor"}, ToolCalls: []fakemodel.ToolCall{call("c2", "mcp__test__echo", `{"text":"second"}`)}},
		{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__test__echo", `{"text":"from the editor"}`)}},
	}, goFiles, lsptest.Config{ShowMessageRequest: q.answer}, agentOpts{settings: map[string]any{
		"approval":   "ask",
		"mcpServers": map[string]any{"test": map[string]any{"command": bin}},
	}})
	r, err := a.run(t, map[string]any{"prompt": "echo through the test server", "mode": "edit"})
	if err != nil || r.Status != "completed" || r.Answer != "The server echoed twice." {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	reqs := a.model.Requests()
	first := string(reqs[0].Body)
	if !strings.Contains(first, `"name":"mcp__test__echo"`) || !strings.Contains(first, "the text to echo") {
		t.Errorf("the model's first request lacks mcp__test__echo with its schema")
	}
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "echo: second") {
		t.Errorf("the server's answer did not reach the model")
	}
	msgs := q.messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Message, "mcp__test__echo") && !strings.Contains(msgs[0].Message, "echo of the MCP server test") {
		t.Fatalf("approval questions = %+v; want one for the MCP tool", msgs)
	}
	hasAlways := false
	for _, act := range msgs[0].Actions {
		hasAlways = hasAlways || act.Title == lsp.ActionAlwaysPrefix+" `mcp__test__echo`"
	}
	if !hasAlways {
		t.Errorf("actions = %+v; want Always allow `mcp__test__echo`", msgs[0].Actions)
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); !strings.Contains(rep, "mcp__test__echo") {
		t.Errorf("the report does not list the MCP call")
	}
	// agentls.tools lists the server's tools with their source.
	raw, _, err := a.c.ExecuteCommand(ctx(t), lsp.CommandTools, nil)
	var l lsp.ToolsReply
	if err != nil || json.Unmarshal(raw, &l) != nil {
		t.Fatalf("agentls.tools = %s, %v", raw, err)
	}
	listed := false
	for _, tl := range l.Tools {
		if tl.Name == "mcp__test__echo" {
			listed = tl.Source == "mcp:test" && slices.Contains(tl.Effects, "external")
		}
	}
	if !listed {
		t.Errorf("agentls.tools does not list mcp__test__echo from mcp:test: %s", raw)
	}
	a.checkNoKey(t)
}

// TestWorkspaceMCPFileNeedsConsent: a repository's .mcp.json starts
// nothing until the user approves that file's servers: denied, its tools
// are not offered and the user is not asked again for the same content; a
// changed file asks again, and approved, its tool works.
func TestWorkspaceMCPFileNeedsConsent(t *testing.T) {
	bin := lsptest.MCPTestServer(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // "always" answers go to the user's config folder
	answer := lsp.ActionDeny
	q := &asked{pick: func(msg string) string {
		if strings.Contains(msg, ".mcp.json") {
			return answer
		}
		return lsp.ActionAllowOnce
	}}
	files := map[string]string{"a.go": goFiles["a.go"], ".mcp.json": `{"mcpServers": {"repo": {"command": "` + bin + `"}}}`}
	a := newAgentSession(t, []fakemodel.Turn{
		{Match: &fakemodel.Match{LastToolResult: "echo: approved"}, Text: "Used the repository's server.", FinishReason: "stop"},
		{Match: &fakemodel.Match{LastUser: "third"}, ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__repo__echo", `{"text":"approved"}`)}},
		{Text: "No server tools here.", FinishReason: "stop", Times: -1},
	}, files, lsptest.Config{ShowMessageRequest: q.answer}, agentOpts{settings: map[string]any{"approval": "ask"}})
	for _, prompt := range []string{"first task", "second task"} {
		r, err := a.run(t, map[string]any{"prompt": prompt, "mode": "edit"})
		if err != nil || r.Status != "completed" {
			t.Fatalf("%s: reply = %+v, %v", prompt, r, err)
		}
	}
	if n := len(q.messages()); n != 1 {
		t.Errorf("asked %d times about the same .mcp.json; want once", n)
	}
	for _, req := range a.model.Requests() {
		if strings.Contains(string(req.Body), "mcp__repo__") {
			t.Fatal("a tool of the refused .mcp.json reached the model")
		}
	}
	if m := q.messages()[0].Message; !strings.Contains(m, "repo: "+bin) || !strings.Contains(m, "without network") {
		t.Errorf("the question does not say what would run: %q", m)
	}
	// The repository changes the file: the user is asked again.
	if err := os.WriteFile(a.path(".mcp.json"), []byte(`{"mcpServers": {"repo": {"command": "`+bin+`", "args": []}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	answer = lsp.ActionAllowOnce
	r, err := a.run(t, map[string]any{"prompt": "third task", "mode": "edit"})
	if err != nil || r.Status != "completed" || r.Answer != "Used the repository's server." {
		t.Fatalf("third task: reply = %+v, %v", r, err)
	}
	if n := len(q.messages()); n != 3 { // the file, then the tool call
		t.Errorf("asked %d times; want 3 (the first file, the changed file, the call)", n)
	}
}

// TestMCPServerSecretsAreRedacted: a token the user gives a server in its
// env reaches the server, but never the model, the log or the report,
// even when the server prints it.
func TestMCPServerSecretsAreRedacted(t *testing.T) {
	bin := lsptest.MCPTestServer(t)
	const token = "tok-SECRET-mcp-7f3a9c1e"
	a := newAgentSession(t, []fakemodel.Turn{
		{Match: &fakemodel.Match{LastToolResult: "SERVICE_TOKEN="}, Text: "The server has its token.", FinishReason: "stop"},
		{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__test__env", `{"name":"SERVICE_TOKEN"}`)}},
	}, goFiles, lsptest.Config{}, agentOpts{settings: map[string]any{
		"mcpServers": map[string]any{"test": map[string]any{"command": bin, "env": map[string]string{"SERVICE_TOKEN": token}}},
	}})
	r, err := a.run(t, map[string]any{"prompt": "does the server have its token?", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	reqs := a.model.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if strings.Contains(last, token) || !strings.Contains(last, "SERVICE_TOKEN=[redacted]") {
		t.Errorf("the model's request after the call does not hide the token:\n%s", last)
	}
	if strings.Contains(a.logs.String(), token) {
		t.Error("the server log holds the token")
	}
	if rep := readFile(t, strings.TrimPrefix(r.Report, "file://")); strings.Contains(rep, token) {
		t.Error("the report holds the token")
	}
}
