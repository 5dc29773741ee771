package acp_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
)

// connectWith runs the agent over pipes against turns, in a workspace
// holding files, and opens a session.
func connectWith(t *testing.T, c *testClient, turns []fakemodel.Turn, files map[string]string) (*sdk.ClientSideConnection, sdk.SessionId) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no prompt files of the user running the test
	model, err := fakemodel.Listen("127.0.0.1:0", fakemodel.Script{Turns: turns}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
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
	return conn, s.SessionId
}

// announced waits for the session's available_commands_update.
func announced(t *testing.T, c *testClient) []sdk.AvailableCommand {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ups, _ := c.snapshot()
		for _, u := range ups {
			if u.AvailableCommandsUpdate != nil {
				return u.AvailableCommandsUpdate.AvailableCommands
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no available_commands_update")
	return nil
}

// TestCustomCommandAndToolsInACP: a prompt file of .agentls/commands is
// announced with its description and argument hint; "/review main.go"
// sends the file's prompt with $ARGUMENTS replaced to the model; /tools
// lists the model's tools with their source, without a model call.
func TestCustomCommandAndToolsInACP(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, id := connectWith(t, c, []fakemodel.Turn{
		{Match: &fakemodel.Match{LastUser: "Review main.go for bugs, most severe first."}, Text: "main.go has no bugs."},
	}, map[string]string{
		"main.go":                     fixture,
		".agentls/commands/review.md": "---\ndescription: Review files for bugs\nargument-hint: <files>\n---\nReview $ARGUMENTS for bugs, most severe first.\n",
	})
	cmds := announced(t, c)
	var names []string
	var review *sdk.AvailableCommand
	for i, cm := range cmds {
		names = append(names, cm.Name)
		if cm.Name == "review" {
			review = &cmds[i]
		}
	}
	if review == nil || review.Description != "Review files for bugs" || review.Input == nil || review.Input.Unstructured == nil || review.Input.Unstructured.Hint != "<files>" {
		t.Fatalf("announced %v; want /review with its description and hint", names)
	}
	if !strings.Contains(strings.Join(names, " "), "tools") {
		t.Errorf("announced %v; want /tools", names)
	}

	if r := prompt(t, conn, id, "/review main.go"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	if got := c.text(); !strings.Contains(got, "main.go has no bugs.") {
		t.Fatalf("answer %q; want the scripted answer to the expanded prompt", got)
	}

	prompt(t, conn, id, "/tools")
	got := c.text()
	for _, want := range []string{"`read_file` (built-in; read-only)", "`run_command` (built-in; runs programs)", "## Hooks"} {
		if !strings.Contains(got, want) {
			t.Errorf("/tools lacks %q:\n%s", want, got)
		}
	}
}
