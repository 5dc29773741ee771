package acp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestSessionMCPServers: the stdio MCP server a client gives session/new
// (as Zed and other ACP clients do) gives the session's tasks its tools:
// the model calls mcp__test__add, the client is asked for permission
// for that tool call, and the server's answer reaches the model. The
// reply to session/new says the server is used; a server the agent
// cannot use is named as not used.
func TestSessionMCPServers(t *testing.T) {
	bin := lsptest.MCPTestServer(t)
	model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Match: &fakemodel.Match{System: "You check the work of a coding agent"}, Text: "PASS", Times: -1},
		{Match: &fakemodel.Match{LastToolResult: "42"}, Text: "The server says 42.", FinishReason: "stop"},
		{ToolCalls: []fakemodel.ToolCall{{ID: "call-add", Name: "mcp__test__add", Arguments: fakemodel.Args(`{"a":40,"b":2}`)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	settings := session.Defaults()
	settings.BaseURL, settings.Model, settings.Validate = model.URL(), "test-model", "off"
	c := &testClient{answer: "allow_once"}
	conn := serveOverPipes(t, c, acp.Options{Settings: settings, Getenv: keyEnv("test-key"), DBPath: filepath.Join(t.TempDir(), "agentls.db")})
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer tcancel()
	init, err := conn.Initialize(tctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	if caps := init.AgentCapabilities.McpCapabilities; !caps.Http {
		t.Errorf("mcpCapabilities = %+v; want http", caps)
	}
	s, err := conn.NewSession(tctx, sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "test", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{{Name: "MODE", Value: "acp"}}}},
		{Stdio: &sdk.McpServerStdio{Name: "bad name", Command: bin}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	note, _ := s.Meta["agentls"].(map[string]any)
	if !strings.Contains(note["mcpServers"].(string), "1 used") || note["notUsed"] == nil {
		t.Errorf("session/new _meta = %v; want one server used and one named as not used", s.Meta)
	}
	r, err := conn.Prompt(tctx, sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("add 40 and 2 with the server")}})
	if err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	if got := c.text(); !strings.Contains(got, "The server says 42.") {
		t.Errorf("answer = %q", got)
	}
	ups, perms := c.snapshot()
	if len(perms) != 1 {
		t.Fatalf("permission requests = %+v; want one", perms)
	}
	id := perms[0].ToolCall.ToolCallId
	var started, finished bool
	for _, u := range ups {
		if tc := u.ToolCall; tc != nil && tc.ToolCallId == id && strings.Contains(tc.Title, "mcp__test__add") {
			started = true
		}
		if tu := u.ToolCallUpdate; tu != nil && tu.ToolCallId == id && tu.Status != nil && *tu.Status == sdk.ToolCallStatusCompleted {
			finished = true
		}
	}
	if !started || !finished {
		t.Errorf("tool call %s: started %v, completed %v; want a tool_call titled with mcp__test__add, then completed", id, started, finished)
	}
	reqs := model.Requests()
	if !strings.Contains(string(reqs[0].Body), `"name":"mcp__test__add"`) {
		t.Error("the model was not offered mcp__test__add")
	}
}

// TestMCPStartFailureShownInUpdates: a client's MCP server that does not
// start is shown to the client as a failed tool call whose content has
// the end of the server's stderr; the turn goes on.
func TestMCPStartFailureShownInUpdates(t *testing.T) {
	model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Match: &fakemodel.Match{System: "You check the work of a coding agent"}, Text: "PASS", Times: -1},
		{Text: "Nothing to change.", FinishReason: "stop"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	settings := session.Defaults()
	settings.BaseURL, settings.Model, settings.Validate = model.URL(), "test-model", "off"
	c := &testClient{answer: "allow_once"}
	conn := serveOverPipes(t, c, acp.Options{Settings: settings, Getenv: keyEnv("test-key"), DBPath: filepath.Join(t.TempDir(), "agentls.db")})
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer tcancel()
	if _, err := conn.Initialize(tctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	script := `echo "npm warn config" >&2; echo "npm error 404 Not Found - GET https://registry.npmjs.org/@acme%2fgh-mcp" >&2; exit 1`
	s, err := conn.NewSession(tctx, sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "github", Command: "sh", Args: []string{"-c", script}, Env: []sdk.EnvVariable{}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := conn.Prompt(tctx, sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("fix the bug in main.go")}})
	if err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	ups, _ := c.snapshot()
	const tail = "npm warn config\nnpm error 404 Not Found - GET https://registry.npmjs.org/@acme%2fgh-mcp"
	var shown bool
	for _, u := range ups {
		tc := u.ToolCall
		if tc == nil || tc.Status != sdk.ToolCallStatusFailed || !strings.Contains(tc.Title, `"github" did not start`) {
			continue
		}
		for _, ct := range tc.Content {
			if ct.Content != nil && ct.Content.Content.Text != nil && strings.HasSuffix(ct.Content.Content.Text.Text, tail) {
				shown = true
			}
		}
	}
	if !shown {
		t.Errorf("no failed tool call with the server's stderr among the updates: %+v", ups)
	}
}
