package acp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/lsp/lsptest"
)

// testClient is an ACP client without file system or terminal capabilities:
// it records updates and answers permission questions.
type testClient struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	perms   []sdk.RequestPermissionRequest
	answer  string
}

func (c *testClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	return nil
}

func (c *testClient) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.perms = append(c.perms, p)
	if c.answer == "cancelled" {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(c.answer))}, nil
}

var errNoCapability = errors.New("not offered by this client")

func (c *testClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNoCapability
}
func (c *testClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNoCapability
}
func (c *testClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNoCapability
}
func (c *testClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNoCapability
}
func (c *testClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNoCapability
}
func (c *testClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNoCapability
}
func (c *testClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNoCapability
}

func (c *testClient) snapshot() ([]sdk.SessionUpdate, []sdk.RequestPermissionRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionUpdate(nil), c.updates...), append([]sdk.RequestPermissionRequest(nil), c.perms...)
}

func (c *testClient) text() string {
	ups, _ := c.snapshot()
	var b strings.Builder
	for _, u := range ups {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

const fixture = "package main\n\nfunc main() {}\n"

// connect runs the agent over pipes against the scripted model in
// testdata/model.json and returns a connected, initialized client and the
// session's workspace.
func connect(t *testing.T, c *testClient) (*sdk.ClientSideConnection, string, sdk.SessionId) {
	t.Helper()
	return connectWithKey(t, c, "test-key")
}

// connectWithKey is connect with key as the API key of the environment.
func connectWithKey(t *testing.T, c *testClient, key string) (*sdk.ClientSideConnection, string, sdk.SessionId) {
	t.Helper()
	return connectClient(t, c, key, sdk.ClientCapabilities{})
}

// connectClient is connect with any client and the capabilities it offers.
func connectClient(t *testing.T, c sdk.Client, key string, caps sdk.ClientCapabilities) (*sdk.ClientSideConnection, string, sdk.SessionId) {
	t.Helper()
	return connectSettings(t, c, key, caps, nil)
}

// connectSettings is connectClient with the user's settings changed by edit.
func connectSettings(t *testing.T, c sdk.Client, key string, caps sdk.ClientCapabilities, edit func(*session.Settings)) (*sdk.ClientSideConnection, string, sdk.SessionId) {
	t.Helper()
	script, err := fakemodel.LoadScript("testdata/model.json", "")
	if err != nil {
		t.Fatal(err)
	}
	model, err := fakemodel.Listen("127.0.0.1:0", script, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := session.Defaults()
	settings.BaseURL, settings.Model = model.URL(), "test-model"
	if edit != nil {
		edit(&settings)
	}
	conn := serveOverPipes(t, c, acp.Options{Settings: settings, Getenv: keyEnv(key), DBPath: filepath.Join(t.TempDir(), "agentls.db")})
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(tcancel)
	if _, err := conn.Initialize(tctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(tctx, sdk.NewSessionRequest{Cwd: root, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return conn, root, s.SessionId
}

func prompt(t *testing.T, conn *sdk.ClientSideConnection, id sdk.SessionId, text string) sdk.PromptResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return r
}

func TestRejectAlwaysDeniesTheSameProgramWithoutAsking(t *testing.T) {
	c := &testClient{answer: "reject_always"}
	conn, root, id := connect(t, c)
	if r := prompt(t, conn, id, "REJECTALWAYS: make two markers"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	_, perms := c.snapshot()
	if len(perms) != 1 {
		t.Fatalf("%d permission requests; want 1 (the second command of the same program is rejected without asking)", len(perms))
	}
	kinds := map[sdk.PermissionOptionKind]bool{}
	for _, o := range perms[0].Options {
		kinds[o.Kind] = true
	}
	for _, k := range []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways, sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways} {
		if !kinds[k] {
			t.Errorf("a command's question lacks %s: %+v", k, perms[0].Options)
		}
	}
	for _, f := range []string{"first-marker", "second-marker"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s exists: a rejected command ran", f)
		}
	}
	if !strings.Contains(c.text(), "Neither command was allowed.") {
		t.Errorf("answer %q", c.text())
	}
}

func TestDiskEditAsksWithoutAlwaysAndShowsADiffThatUndoReverts(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, root, id := connect(t, c)
	main := filepath.Join(root, "main.go")
	prompt(t, conn, id, "DISKEDIT: add a header")
	got, _ := os.ReadFile(main)
	if string(got) != "// Header.\n"+fixture {
		t.Fatalf("main.go after the edit:\n%s", got)
	}
	ups, perms := c.snapshot()
	if len(perms) != 1 {
		t.Fatalf("%d permission requests; want 1 (a write to a file the editor does not hold)", len(perms))
	}
	for _, o := range perms[0].Options {
		if o.Kind == sdk.PermissionOptionKindAllowAlways {
			t.Errorf("a write offers %q: only command prefixes may be remembered", o.Name)
		}
	}
	var diff *sdk.ToolCallContentDiff
	for _, u := range ups {
		if u.ToolCallUpdate != nil {
			for _, cc := range u.ToolCallUpdate.Content {
				if cc.Diff != nil {
					diff = cc.Diff
				}
			}
		}
	}
	if diff == nil || diff.Path != main || diff.OldText == nil || *diff.OldText != fixture || diff.NewText != "// Header.\n"+fixture {
		t.Fatalf("diff %+v; want %s from the fixture to the header", diff, main)
	}

	n := len(ups)
	prompt(t, conn, id, "/undo")
	got, _ = os.ReadFile(main)
	if string(got) != fixture {
		t.Fatalf("main.go after /undo:\n%s", got)
	}
	ups, _ = c.snapshot()
	undone := false
	for _, u := range ups[n:] {
		if u.ToolCall != nil && u.ToolCall.Kind == sdk.ToolKindEdit && len(u.ToolCall.Content) == 1 && u.ToolCall.Content[0].Diff != nil {
			undone = u.ToolCall.Content[0].Diff.NewText == fixture
		}
	}
	if !undone {
		t.Error("/undo showed no diff back to the fixture")
	}
	if !strings.Contains(c.text(), "1 file(s) reverted") {
		t.Errorf("answer %q", c.text())
	}
}

func TestAllowAlwaysRemembersTheCommandPrefixForTheWorkspace(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	c := &testClient{answer: "allow_always"}
	conn, root, id := connect(t, c)
	prompt(t, conn, id, "ALLOWALWAYS1: make a marker")
	prompt(t, conn, id, "ALLOWALWAYS2: make another marker")
	_, perms := c.snapshot()
	if len(perms) != 1 {
		t.Fatalf("%d permission requests; want 1 (the second `touch` is allowed by the remembered prefix)", len(perms))
	}
	for _, f := range []string{"allowed-one", "allowed-two"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s: %v (an allowed command did not run)", f, err)
		}
	}
	got, err := session.RememberedCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "touch" {
		t.Errorf("remembered commands = %q; want [touch]", got)
	}
}

// TestConnectionDiagnosticsReachOurLoggerEvenOnImmediateEOF: a client that
// closes its end at once still has the SDK's disconnect record logged through
// the logger agentls gave, never through the process default.
func TestConnectionDiagnosticsReachOurLoggerEvenOnImmediateEOF(t *testing.T) {
	for i := range 20 {
		var logged lsptest.SyncBuffer
		logger := slog.New(slog.NewTextHandler(&logged, nil))
		done := make(chan error, 1)
		go func() {
			done <- acp.Serve(context.Background(), strings.NewReader(""), io.Discard,
				acp.Options{Logger: logger, DBPath: filepath.Join(t.TempDir(), "agentls.db")})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d: Serve: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d: Serve still running 10 s after its input ended", i)
		}
		// The SDK logs just after it reports the disconnect, so give it a moment.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logged.String(), "connection closed") && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !strings.Contains(logged.String(), "connection closed") {
			t.Fatalf("run %d: our logger holds %q; want the SDK's \"connection closed\" record", i, logged.String())
		}
	}
}

// TestSessionUpdatesCarryNoSecret: a model that repeats the API key and a
// token shaped like GitHub's streams them as message chunks; the client
// sees neither, only the redactor's mark.
func TestSessionUpdatesCarryNoSecret(t *testing.T) {
	c := &testClient{}
	conn, _, id := connectWithKey(t, c, "test-key-SECRET-0042")
	prompt(t, conn, id, "ECHOSECRETS")
	got := c.text()
	for _, secret := range []string{"test-key-SECRET-0042", "ghp_0123456789abcdefABCDEF0123456789abcd"} {
		if strings.Contains(got, secret) {
			t.Errorf("the client saw %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "[redacted]") {
		t.Errorf("message text %q; want the secrets replaced by [redacted]", got)
	}
}

// serveOverPipes runs the ACP agent with opts over a pair of pipes and
// returns client c's connection to it; the agent is stopped at the test's
// end.
func serveOverPipes(t *testing.T, c sdk.Client, opts acp.Options) *sdk.ClientSideConnection {
	t.Helper()
	w, r, _ := servePipes(t, opts)
	conn := sdk.NewClientSideConnection(c, w, r)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	return conn
}

// servePipes runs acp.Serve over in-memory pipes and returns the client's
// ends: w to the agent, r from it. stop ends the agent and waits for it (the
// test's cleanup calls it too).
func servePipes(t *testing.T, opts acp.Options) (w io.Writer, r io.Reader, stop func()) {
	t.Helper()
	ar, cw := io.Pipe()
	cr, aw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = acp.Serve(ctx, ar, aw, opts)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			_ = cw.Close()
			_ = aw.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return cw, cr, stop
}

// keyEnv is an environment holding only the API key.
func keyEnv(key string) func(string) string {
	return func(k string) string {
		if k == session.EnvAPIKey {
			return key
		}
		return ""
	}
}
