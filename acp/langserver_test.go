package acp_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"golang.org/x/tools/txtar"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
)

// connectGreet runs the agent over pipes against turns, in a copy of
// langserver/testdata/greet.txtar (a Go module; agentls starts its own
// gopls for it).
func connectGreet(t *testing.T, c *testClient, turns []fakemodel.Turn) (*sdk.ClientSideConnection, string, sdk.SessionId, *fakemodel.Server) {
	t.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		t.Fatalf("gopls is not on PATH: run make install: %v", err)
	}
	model, err := fakemodel.Listen("127.0.0.1:0", fakemodel.Script{Turns: turns}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	root := t.TempDir()
	ar, err := txtar.ParseFile("../langserver/testdata/greet.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		p := filepath.Join(root, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	settings := session.Defaults()
	settings.BaseURL, settings.Model, settings.Validate = model.URL(), "test-model", "off"
	conn := serveOverPipes(t, c, acp.Options{Settings: settings, Getenv: keyEnv("test-key"), DBPath: filepath.Join(t.TempDir(), "agentls.db")})
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(tcancel)
	if _, err := conn.Initialize(tctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(tctx, sdk.NewSessionRequest{Cwd: root, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return conn, root, s.SessionId, model
}

// TestRenameSymbolThroughACP: `agentls acp` with its own gopls renames
// Greet everywhere in one rename_symbol call (one permission question for
// the files on disk), the module builds, and /undo reverts it.
func TestRenameSymbolThroughACP(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, root, id, model := connectGreet(t, c, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "rename_symbol", Arguments: `{"file":"main.go","symbol":"Greet","new_name":"Hello"}`}}},
		{Match: &fakemodel.Match{LastToolResult: "renamed Greet to Hello via gopls"}, Text: "Greet is now Hello.", FinishReason: "stop"},
	})
	if r := prompt(t, conn, id, "rename Greet to Hello everywhere"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model calls; want 2", n)
	}
	_, perms := c.snapshot()
	if len(perms) != 1 {
		t.Errorf("%d permission requests; want 1 for the whole rename", len(perms))
	}
	build := exec.Command("go", "build", "./...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build after the rename: %v\n%s\nanswer: %s", err, out, c.text())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "greet/greet.go")); !strings.Contains(string(b), "func Hello(") {
		t.Fatalf("greet.go after the rename:\n%s\nanswer: %s", b, c.text())
	}
	prompt(t, conn, id, "/undo")
	if b, _ := os.ReadFile(filepath.Join(root, "greet/greet.go")); !strings.Contains(string(b), "func Greet(") {
		t.Errorf("greet.go after /undo:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "main.go")); !strings.Contains(string(b), "greet.Greet(") {
		t.Errorf("main.go after /undo:\n%s", b)
	}
	if !strings.Contains(c.text(), "2 file(s) reverted") {
		t.Errorf("answer %q; want both files reverted in one undo", c.text())
	}
}

// TestWhoCallsTotalThroughACP: one references call answers, with the
// three calls and no comment or string mention.
func TestWhoCallsTotalThroughACP(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, _, id, model := connectGreet(t, c, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "references", Arguments: `{"file":"order/total.go","symbol":"Total"}`}}},
		{Match: &fakemodel.Match{LastToolResult: "references of Total"}, Text: "Summary, Average and TotalTax call Total.", FinishReason: "stop"},
	})
	prompt(t, conn, id, "who calls Total?")
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls; want 2", len(reqs))
	}
	last := string(reqs[1].Body)
	for _, want := range []string{"via gopls: 3 in 2 file(s)", "6: return fmt.Sprintf", "13: return Total(prices) / len(prices)", "13: func TotalTax"} {
		if !strings.Contains(last, want) {
			t.Errorf("the references result lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(last, "Total is printed") {
		t.Errorf("the references result lists a comment")
	}
}
