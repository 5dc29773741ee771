package acp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
)

// world is a workspace, a session database and a scripted model that
// outlive one agent process: agents started on it see each other's
// sessions, as after a restart.
type world struct {
	root, db string
	model    *fakemodel.Server
	settings session.Settings
}

func newWorld(t *testing.T) *world {
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
	st := session.Defaults()
	st.BaseURL, st.Model = model.URL(), "test-model"
	st.Models = []session.ModelInfo{{Name: "test-model"}, {Name: "thinker", ReasoningEfforts: []string{"low", "medium", "high"}}}
	return &world{root: root, db: filepath.Join(t.TempDir(), "agentls.db"), model: model, settings: st}
}

// start runs one agent process on the world and returns an initialized
// client connection; stop ends that process.
func (w *world) start(t *testing.T, c sdk.Client) (conn *sdk.ClientSideConnection, stop func()) {
	t.Helper()
	cw, cr, stop := servePipes(t, acp.Options{Settings: w.settings, Getenv: func(string) string { return "test-key" }, DBPath: w.db})
	conn = sdk.NewClientSideConnection(c, cw, cr)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(context.Background(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return conn, stop
}

func selectOption(opts []sdk.SessionConfigOption, id string) *sdk.SessionConfigOptionSelect {
	for _, o := range opts {
		if o.Select != nil && string(o.Select.Id) == id {
			return o.Select
		}
	}
	return nil
}

// TestSessionLivesFromNewAndRestoresItsMode: a session that never ran a
// task loads after a restart, with the mode it was in, announced; it is
// listed; its first prompt names it.
func TestSessionLivesFromNewAndRestoresItsMode(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c1 := &testClient{}
	conn, stop := w.start(t, c1)
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: w.root, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatal(err)
	}
	stop()

	c2 := &testClient{}
	conn, stop = w.start(t, c2)
	list, err := conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: &w.root})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].SessionId != ns.SessionId {
		t.Errorf("session/list %+v; want the new session", list.Sessions)
	}
	ls, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: w.root, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/load of a session without a task: %v", err)
	}
	if ls.Modes == nil || ls.Modes.CurrentModeId != "ask" {
		t.Errorf("loaded modes %+v; want ask restored", ls.Modes)
	}
	if m := selectOption(ls.ConfigOptions, "mode"); m == nil || m.CurrentValue != "ask" {
		t.Errorf("loaded config options %+v; want mode ask", ls.ConfigOptions)
	}
	ups, _ := c2.snapshot()
	announced := false
	for _, u := range ups {
		if u.CurrentModeUpdate != nil && u.CurrentModeUpdate.CurrentModeId == "ask" {
			announced = true
		}
	}
	if !announced {
		t.Error("no current_mode_update on load")
	}

	prompt(t, conn, ns.SessionId, "JUSTANSWER: what is here?")
	ups, _ = c2.snapshot()
	var title string
	for _, u := range ups {
		if u.SessionInfoUpdate != nil && u.SessionInfoUpdate.Title != nil {
			title = *u.SessionInfoUpdate.Title
		}
	}
	if title != "JUSTANSWER: what is here?" {
		t.Errorf("session title %q; want the first prompt's line", title)
	}
	// Ask mode: the task was a question.
	reqs := w.model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not called")
	}
	prompt(t, conn, ns.SessionId, "/undo")
	if got := c2.text(); !strings.Contains(got, "Nothing to undo: the last task (\"JUSTANSWER: what is here?\") changed no file.") {
		t.Errorf("/undo after a question: %q", got)
	}
	stop()

	// Resume: no history replayed, the state restored.
	c3 := &testClient{}
	conn, _ = w.start(t, c3)
	rs, err := conn.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: ns.SessionId, Cwd: w.root})
	if err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	if rs.Modes == nil || rs.Modes.CurrentModeId != "ask" {
		t.Errorf("resumed modes %+v", rs.Modes)
	}
	// A session closed before any task is forgotten; one with tasks stays.
	empty, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: w.root, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []sdk.SessionId{empty.SessionId, ns.SessionId} {
		if _, err := conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id}); err != nil {
			t.Fatalf("session/close: %v", err)
		}
	}
	list, err = conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: &w.root})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].SessionId != ns.SessionId {
		t.Errorf("after closing: %+v; want only the session that ran tasks", list.Sessions)
	}
	ups, _ = c3.snapshot()
	for _, u := range ups {
		if u.UserMessageChunk != nil || u.AgentMessageChunk != nil {
			t.Errorf("session/resume replayed history: %+v", u)
		}
	}
}

// TestConfigOptionsPickTheModelAndItsEffort: the model picker lists the
// declared models; a model with reasoning efforts adds the effort option;
// the next task calls the chosen model with the chosen effort.
func TestConfigOptionsPickTheModelAndItsEffort(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	conn, _ := w.start(t, &testClient{})
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: w.root, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	m := selectOption(ns.ConfigOptions, "model")
	if m == nil || m.CurrentValue != "test-model" || m.Options.Ungrouped == nil || len(*m.Options.Ungrouped) != 2 {
		t.Fatalf("model option %+v; want test-model of two", m)
	}
	if selectOption(ns.ConfigOptions, "reasoning_effort") != nil {
		t.Error("a model without efforts offers a reasoning effort")
	}
	set := func(id, value string) sdk.SetSessionConfigOptionResponse {
		t.Helper()
		r, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
			SessionId: ns.SessionId, ConfigId: sdk.SessionConfigId(id), Value: sdk.SessionConfigValueId(value)}})
		if err != nil {
			t.Fatalf("set %s=%s: %v", id, value, err)
		}
		return r
	}
	r := set("model", "thinker")
	if e := selectOption(r.ConfigOptions, "reasoning_effort"); e == nil || e.CurrentValue != "medium" {
		t.Fatalf("after picking thinker: %+v; want a reasoning effort, medium by default", r.ConfigOptions)
	}
	set("reasoning_effort", "high")
	if _, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: ns.SessionId, ConfigId: "model", Value: "no-such-model"}}); err == nil {
		t.Error("an unknown model was accepted")
	}
	prompt(t, conn, ns.SessionId, "JUSTANSWER: hi")
	reqs := w.model.Requests()
	var body struct {
		Model  string `json:"model"`
		Effort string `json:"reasoning_effort"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "thinker" || body.Effort != "high" {
		t.Errorf("the task called model %q with effort %q; want thinker, high", body.Model, body.Effort)
	}
}
