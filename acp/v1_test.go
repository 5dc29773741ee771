package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/internal/rawrpc"
)

// The v1 surface, each method spoken by a raw client over real pipes
// (os.Pipe): the client writes JSON lines, reads every line the agent
// writes and answers the agent's requests itself.

// A 1x1 PNG.
const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// v1Script is the scripted model of these tests.
var v1Script = fakemodel.Script{Turns: []fakemodel.Turn{
	{Name: "validator", Match: &fakemodel.Match{System: "You check the work of a coding agent"}, Times: -1, Text: "PASS"},
	{Name: "image seen", Match: &fakemodel.Match{LastUser: "IMAGE", Image: "data:image/png;base64," + png1x1}, Times: -1, Text: "I see a PNG image."},
	{Name: "image refused", Match: &fakemodel.Match{LastUser: "REFUSEIMG"}, Times: -1, Status: 400,
		Body: `{"error":{"message":"Invalid content type. image_url is only supported by certain models.","type":"invalid_request_error"}}`},
	{Name: "read: answer", Match: &fakemodel.Match{LastUser: "READ", LastToolResult: "package main"}, Times: -1, Text: "main.go declares package main."},
	{Name: "read: call", Match: &fakemodel.Match{LastUser: "READ"}, Times: -1,
		ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Arguments: `{"path":"main.go"}`}}},
	{Name: "after the cancel (the follow-up quotes SLOW)", Match: &fakemodel.Match{LastUser: "AFTERCANCEL"}, Times: -1, Text: "here again"},
	{Name: "slow: a command that asks", Match: &fakemodel.Match{LastUser: "SLOW"}, Times: -1,
		ToolCalls: []fakemodel.ToolCall{{Name: "run_command", Arguments: `{"command":"sleep 30"}`}}},
	{Name: "default", Times: -1, Text: "ok"},
}}

// wireMsg is any JSON-RPC message.
type wireMsg = rawrpc.Message

// rawClient is an ACP client of raw lines over os.Pipe.
type rawClient struct {
	*rawrpc.Conn
	t  *testing.T
	mu sync.Mutex // guards the answers below
	// permission answers session/request_permission ("" holds it unanswered).
	permission string
	// elicitation is the result elicitation/create is answered with.
	elicitation string
}

// v1Agent serves an agent over os.Pipe against the v1 script; edit changes
// its settings, opts its options.
func v1Agent(t *testing.T, dbPath, root string, edit func(*session.Settings), opts func(*acp.Options)) *rawClient {
	t.Helper()
	return scriptedAgent(t, v1Script, dbPath, edit, opts)
}

// scriptedAgent is v1Agent with a script of its own.
func scriptedAgent(t *testing.T, script fakemodel.Script, dbPath string, edit func(*session.Settings), opts func(*acp.Options)) *rawClient {
	t.Helper()
	model, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	settings := session.Defaults()
	settings.BaseURL, settings.Model, settings.Validate = model.URL(), "test-model", "off"
	if edit != nil {
		edit(&settings)
	}
	o := acp.Options{Settings: settings, Getenv: keyEnv("test-key"), DBPath: dbPath}
	if os.Getenv("V1DEBUG") != "" {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts != nil {
		opts(&o)
	}
	ar, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cr, aw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = acp.Serve(ctx, ar, aw, o)
		_ = aw.Close()
	}()
	c := &rawClient{t: t, permission: "allow_once", elicitation: `{"action":"decline"}`}
	c.Conn = rawrpc.New(t, cr, cw, rawrpc.Options{OnRequest: c.answer})
	t.Cleanup(func() {
		cancel()
		_ = cw.Close()
		<-done
		_ = ar.Close()
		_ = cr.Close()
	})
	return c
}

// answer answers the agent's questions: elicitation/create with
// c.elicitation, session/request_permission with the option c.permission.
func (c *rawClient) answer(conn *rawrpc.Conn, m wireMsg) {
	c.mu.Lock()
	answer, form := c.permission, c.elicitation
	c.mu.Unlock()
	switch {
	case m.Method == "elicitation/create":
		conn.Answer(m.ID, json.RawMessage(form))
	case m.Method == "session/request_permission" && answer != "":
		conn.Answer(m.ID, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": answer}})
	}
}

// call sends a request and waits for its reply.
func (c *rawClient) call(method string, params any) wireMsg {
	c.t.Helper()
	return c.Call(method, params)
}

// ok is call that fails the test on an error reply, decoding the result into out.
func (c *rawClient) ok(method string, params any, out any) {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
}

// updates are the session/update payloads the agent sent for session id.
func (c *rawClient) updates(id string) []map[string]any {
	var out []map[string]any
	for _, m := range c.Seen() {
		if m.Method != "session/update" {
			continue
		}
		var p struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.SessionID == id {
			out = append(out, p.Update)
		}
	}
	return out
}

// agentText is the agent_message_chunk text sent for session id.
func (c *rawClient) agentText(id string) string {
	var b strings.Builder
	for _, u := range c.updates(id) {
		if u["sessionUpdate"] == "agent_message_chunk" {
			if content, ok := u["content"].(map[string]any); ok {
				b.WriteString(fmt.Sprint(content["text"]))
			}
		}
	}
	return b.String()
}

func (c *rawClient) initialize(caps string) map[string]any {
	c.t.Helper()
	var init map[string]any
	c.ok("initialize", json.RawMessage(`{"protocolVersion":1,"clientCapabilities":`+caps+`}`), &init)
	return init
}

func (c *rawClient) newSession(root string) string {
	c.t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	c.ok("session/new", map[string]any{"cwd": root, "mcpServers": []any{}}, &r)
	return r.SessionID
}

func (c *rawClient) prompt(id string, blocks ...map[string]any) wireMsg {
	c.t.Helper()
	return c.call("session/prompt", map[string]any{"sessionId": id, "prompt": blocks})
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func workspaceRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// get reads a path of nested JSON objects.
func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestInitializeAdvertisesTheV1Surface(t *testing.T) {
	c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), "", nil, func(o *acp.Options) { o.Logout = func() error { return nil } })
	init := c.initialize(`{}`)
	caps := get(init, "agentCapabilities")
	for _, tc := range []struct {
		path []string
		want any
	}{
		{[]string{"promptCapabilities", "image"}, true},
		{[]string{"promptCapabilities", "embeddedContext"}, true},
		{[]string{"sessionCapabilities", "delete"}, map[string]any{}},
		{[]string{"sessionCapabilities", "list"}, map[string]any{}},
		{[]string{"sessionCapabilities", "resume"}, map[string]any{}},
		{[]string{"sessionCapabilities", "close"}, map[string]any{}},
		{[]string{"auth", "logout"}, map[string]any{}},
		{[]string{"loadSession"}, true},
	} {
		got := get(caps, tc.path...)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || got == nil {
			t.Errorf("agentCapabilities.%s = %v; want %v", strings.Join(tc.path, "."), got, tc.want)
		}
	}
}

// TestImagePromptReachesTheModel: an image block goes to the model as an
// image part (the fake model answers only when it sees the PNG's data
// URL); a model that refuses images gets one message saying so; a type
// that is not an image the model takes is refused with -32602.
func TestImagePromptReachesTheModel(t *testing.T) {
	root := workspaceRoot(t)
	c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), root, nil, nil)
	c.initialize(`{}`)
	id := c.newSession(root)
	img := map[string]any{"type": "image", "mimeType": "image/png", "data": png1x1}
	r := c.prompt(id, textBlock("IMAGE: what is this?"), img)
	if r.Error != nil || !strings.Contains(string(r.Result), "end_turn") {
		t.Fatalf("image prompt: %+v %s", r.Error, r.Result)
	}
	if got := c.agentText(id); !strings.Contains(got, "I see a PNG image.") {
		t.Fatalf("answer %q: the image did not reach the model", got)
	}

	id2 := c.newSession(root)
	c.prompt(id2, textBlock("REFUSEIMG: and this?"), img)
	got := c.agentText(id2)
	if !strings.Contains(got, "may not take images") || strings.Count(got, "may not take images") != 1 {
		t.Errorf("a refused image answered %q; want one message saying the model may not take images", got)
	}

	for name, block := range map[string]map[string]any{
		"svg":     {"type": "image", "mimeType": "image/svg+xml", "data": png1x1},
		"not b64": {"type": "image", "mimeType": "image/png", "data": "%%%"},
		"uri":     {"type": "image", "mimeType": "image/png", "data": "", "uri": "https://example.com/a.png"},
	} {
		r := c.prompt(id, textBlock("IMAGE"), block)
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s image: %+v; want -32602", name, r.Error)
		}
	}
}

// TestUsageUpdateAfterEachModelCall: every model call of a turn is
// followed by a usage_update with the tokens used, the context size the
// models setting declares for the model (over the contextWindow setting)
// and, with a price set, the session's cost so far.
func TestUsageUpdateAfterEachModelCall(t *testing.T) {
	root := workspaceRoot(t)
	c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), root, func(s *session.Settings) {
		s.ContextWindow = 32000
		s.Models = []session.ModelInfo{{Name: "test-model", ContextWindow: 64000}}
		s.Prices = map[string]session.Price{"test-model": {Input: 1, Output: 2}}
	}, nil)
	c.initialize(`{}`)
	id := c.newSession(root)
	if r := c.prompt(id, textBlock("READ: what package is main.go?")); r.Error != nil {
		t.Fatal(r.Error.Message)
	}
	var usage []map[string]any
	for _, u := range c.updates(id) {
		if u["sessionUpdate"] == "usage_update" {
			usage = append(usage, u)
		}
	}
	if len(usage) != 2 {
		t.Fatalf("%d usage_update; want 2 (a read, then the answer): %v", len(usage), usage)
	}
	last := 0.0
	for i, u := range usage {
		if u["size"] != float64(64000) || u["used"].(float64) <= 0 {
			t.Errorf("usage_update %d: %v; want used > 0 of size 64000", i, u)
		}
		amount, _ := get(u, "cost", "amount").(float64)
		if get(u, "cost", "currency") != "USD" || amount <= last {
			t.Errorf("usage_update %d cost %v; want a growing USD amount", i, u["cost"])
		}
		last = amount
	}
}

// list is one session/list reply.
type listReply struct {
	Sessions []struct {
		SessionID string  `json:"sessionId"`
		Title     *string `json:"title"`
		UpdatedAt *string `json:"updatedAt"`
	} `json:"sessions"`
	NextCursor *string `json:"nextCursor"`
}

func (c *rawClient) list(root string, cursor *string) listReply {
	c.t.Helper()
	p := map[string]any{"cwd": root}
	if cursor != nil {
		p["cursor"] = *cursor
	}
	var r listReply
	c.ok("session/list", p, &r)
	return r
}

func (l listReply) has(id string) bool {
	for _, s := range l.Sessions {
		if s.SessionID == id {
			return true
		}
	}
	return false
}

// TestSessionDeleteForgetsTheSession: a deleted session leaves
// session/list and the store (a later connection cannot load it); the
// other session stays; an unknown one is -32602.
func TestSessionDeleteForgetsTheSession(t *testing.T) {
	root := workspaceRoot(t)
	db := filepath.Join(t.TempDir(), "a.db")
	c := v1Agent(t, db, root, nil, nil)
	c.initialize(`{}`)
	gone, kept, empty := c.newSession(root), c.newSession(root), c.newSession(root)
	c.prompt(gone, textBlock("READ: first"))
	c.prompt(kept, textBlock("hello"))
	l := c.list(root, nil)
	if !l.has(gone) || !l.has(kept) || !l.has(empty) {
		t.Fatalf("list before delete: %+v", l)
	}
	for _, s := range l.Sessions {
		if s.SessionID == gone && (s.Title == nil || *s.Title != "READ: first" || s.UpdatedAt == nil) {
			t.Errorf("listed %+v; want the first prompt as title and an update time", s)
		}
	}
	for _, id := range []string{gone, empty} {
		if m := c.call("session/delete", map[string]any{"sessionId": id}); m.Error != nil || string(m.Result) != "{}" {
			t.Fatalf("session/delete %s: %+v %s", id, m.Error, m.Result)
		}
	}
	l = c.list(root, nil)
	if l.has(gone) || l.has(empty) || !l.has(kept) {
		t.Fatalf("list after delete: %+v; want only %s", l, kept)
	}
	if m := c.call("session/delete", map[string]any{"sessionId": "acp-no-such"}); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("deleting an unknown session: %+v", m.Error)
	}
	if m := c.call("session/prompt", map[string]any{"sessionId": gone, "prompt": []any{textBlock("x")}}); m.Error == nil {
		t.Errorf("a prompt to a deleted session was taken")
	}

	c2 := v1Agent(t, db, root, nil, nil)
	c2.initialize(`{}`)
	if m := c2.call("session/load", map[string]any{"sessionId": gone, "cwd": root, "mcpServers": []any{}}); m.Error == nil {
		t.Errorf("a later connection loaded the deleted session")
	}
	if m := c2.call("session/load", map[string]any{"sessionId": kept, "cwd": root, "mcpServers": []any{}}); m.Error != nil {
		t.Errorf("the kept session does not load: %+v", m.Error)
	}
}

// TestSessionListPagesWithACursor: more sessions than a page: the first
// reply has a nextCursor, the pages together list each session once, and
// a cursor that is not one is -32602.
func TestSessionListPagesWithACursor(t *testing.T) {
	root := workspaceRoot(t)
	c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), root, nil, nil)
	c.initialize(`{}`)
	made := map[string]bool{}
	for range 53 {
		made[c.newSession(root)] = true
	}
	seen := map[string]int{}
	var cursor *string
	pages := 0
	for {
		l := c.list(root, cursor)
		pages++
		for _, s := range l.Sessions {
			seen[s.SessionID]++
		}
		if l.NextCursor == nil {
			break
		}
		if pages > 3 {
			t.Fatal("more pages than sessions")
		}
		cursor = l.NextCursor
	}
	if pages != 2 {
		t.Errorf("%d pages for 53 sessions; want 2", pages)
	}
	for id := range made {
		if seen[id] != 1 {
			t.Errorf("session %s listed %d times", id, seen[id])
		}
	}
	if m := c.call("session/list", map[string]any{"cwd": root, "cursor": "nonsense"}); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("a bad cursor: %+v", m.Error)
	}
}

// TestLoadReplaysTheConversationWithToolCalls: a later connection's
// session/load sends the prompt, the tool call (kind read, its location)
// and the answer before its reply.
func TestLoadReplaysTheConversationWithToolCalls(t *testing.T) {
	root := workspaceRoot(t)
	db := filepath.Join(t.TempDir(), "a.db")
	c := v1Agent(t, db, root, nil, nil)
	c.initialize(`{}`)
	id := c.newSession(root)
	c.prompt(id, textBlock("READ: what package?"))

	c2 := v1Agent(t, db, root, nil, nil)
	c2.initialize(`{}`)
	c2.ok("session/load", map[string]any{"sessionId": id, "cwd": root, "mcpServers": []any{}}, nil)
	var order []string
	for _, u := range c2.updates(id) {
		switch u["sessionUpdate"] {
		case "user_message_chunk":
			if strings.Contains(fmt.Sprint(get(u, "content", "text")), "READ: what package?") {
				order = append(order, "prompt")
			}
		case "tool_call":
			locs, _ := u["locations"].([]any)
			if u["kind"] == "read" && len(locs) == 1 && get(locs[0], "path") == filepath.Join(root, "main.go") {
				order = append(order, "read")
			}
		case "agent_message_chunk":
			if strings.Contains(fmt.Sprint(get(u, "content", "text")), "main.go declares package main.") {
				order = append(order, "answer")
			}
		}
	}
	if strings.Join(order, ",") != "prompt,read,answer" {
		t.Errorf("replayed %v; want prompt, read, answer", order)
	}
}

// TestCancelRequest: $/cancel_request ends a pending session/prompt as
// cancelled; the permission request the agent had pending for that turn
// is cancelled toward the client with a $/cancel_request of its own.
func TestCancelRequest(t *testing.T) {
	root := workspaceRoot(t)
	c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), root, nil, nil)
	c.permission = "" // the question stays unanswered
	c.initialize(`{}`)
	id := c.newSession(root)
	reqID, ch := c.Start("session/prompt", map[string]any{"sessionId": id, "prompt": []any{textBlock("SLOW: wait")}})
	ask := c.WaitFor("the permission question", func(m wireMsg) bool { return m.Method == "session/request_permission" })
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}`, reqID))
	r := c.Await("the cancelled prompt", ch)
	if r.Error != nil && r.Error.Code != -32800 {
		t.Fatalf("cancelled prompt: %+v", r.Error)
	}
	if r.Error == nil && !strings.Contains(string(r.Result), `"cancelled"`) {
		t.Fatalf("cancelled prompt answered %s; want stopReason cancelled", r.Result)
	}
	c.WaitFor("$/cancel_request of the permission question", func(m wireMsg) bool {
		return m.Method == "$/cancel_request" && strings.Contains(string(m.Params), string(ask.ID))
	})
	// The session takes the next prompt.
	if r := c.prompt(id, textBlock("AFTERCANCEL")); r.Error != nil || !strings.Contains(c.agentText(id), "here again") {
		t.Errorf("the next prompt: %+v %s", r.Error, r.Result)
	}
}

// TestLogoutForgetsTheStoredKey: logout calls the option's Logout (which
// removes the key agentls login stored) once per request.
func TestLogoutForgetsTheStoredKey(t *testing.T) {
	var n int
	var mu sync.Mutex
	c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), "", nil, func(o *acp.Options) {
		o.Logout = func() error { mu.Lock(); n++; mu.Unlock(); return nil }
	})
	c.initialize(`{}`)
	if m := c.call("logout", map[string]any{}); m.Error != nil || string(m.Result) != "{}" {
		t.Fatalf("logout: %+v %s", m.Error, m.Result)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 1 {
		t.Errorf("Logout called %d times; want 1", n)
	}
}

// TestBooleanConfigOptionsNarrowOnly: a client that declares boolean
// config options gets review and command network; a session may turn
// review on (and the next edit asks with its diff although approval is
// auto), never off where the settings ask for it; it may turn network off,
// never on where the settings forbid it. A client that does not declare
// them gets none.
func TestBooleanConfigOptionsNarrowOnly(t *testing.T) {
	root := workspaceRoot(t)
	c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), root, func(s *session.Settings) { s.Approval = "auto" }, nil)
	c.initialize(`{"session":{"configOptions":{"boolean":{}}}}`)
	var ns struct {
		SessionID     string           `json:"sessionId"`
		ConfigOptions []map[string]any `json:"configOptions"`
	}
	c.ok("session/new", map[string]any{"cwd": root, "mcpServers": []any{}}, &ns)
	values := func(opts []map[string]any) map[string]any {
		out := map[string]any{}
		for _, o := range opts {
			if o["type"] == "boolean" {
				out[fmt.Sprint(o["id"])] = o["currentValue"]
			}
		}
		return out
	}
	if v := values(ns.ConfigOptions); v["review_edits"] != false || v["command_network"] != false {
		t.Fatalf("boolean options %v; want review_edits and command_network, both off", v)
	}
	set := func(id string, v bool) wireMsg {
		return c.call("session/set_config_option", map[string]any{"sessionId": ns.SessionID, "configId": id, "type": "boolean", "value": v})
	}
	if m := set("command_network", true); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("turning network on against the settings: %+v; want -32602", m.Error)
	}
	m := set("review_edits", true)
	if m.Error != nil {
		t.Fatal(m.Error.Message)
	}
	var r struct {
		ConfigOptions []map[string]any `json:"configOptions"`
	}
	_ = json.Unmarshal(m.Result, &r)
	if values(r.ConfigOptions)["review_edits"] != true {
		t.Errorf("after turning review on: %v", values(r.ConfigOptions))
	}

	other := v1Agent(t, filepath.Join(t.TempDir(), "b.db"), root, func(s *session.Settings) {
		s.Review = session.ReviewAlways
		s.CommandNetwork = session.Network{All: true}
	}, nil)
	other.initialize(`{"session":{"configOptions":{"boolean":{}}}}`)
	var ns2 struct {
		SessionID     string           `json:"sessionId"`
		ConfigOptions []map[string]any `json:"configOptions"`
	}
	other.ok("session/new", map[string]any{"cwd": root, "mcpServers": []any{}}, &ns2)
	if v := values(ns2.ConfigOptions); v["review_edits"] != true || v["command_network"] != true {
		t.Fatalf("boolean options %v; want both on, as the settings say", v)
	}
	if m := other.call("session/set_config_option", map[string]any{"sessionId": ns2.SessionID, "configId": "review_edits", "type": "boolean", "value": false}); m.Error == nil {
		t.Error("a session turned review off against the settings")
	}
	if m := other.call("session/set_config_option", map[string]any{"sessionId": ns2.SessionID, "configId": "command_network", "type": "boolean", "value": false}); m.Error != nil {
		t.Errorf("turning network off: %+v", m.Error)
	}

	plain := v1Agent(t, filepath.Join(t.TempDir(), "c.db"), root, nil, nil)
	plain.initialize(`{}`)
	var ns3 struct {
		ConfigOptions []map[string]any `json:"configOptions"`
	}
	plain.ok("session/new", map[string]any{"cwd": root, "mcpServers": []any{}}, &ns3)
	if v := values(ns3.ConfigOptions); len(v) != 0 {
		t.Errorf("a client without boolean options got %v", v)
	}
}

// TestWorkspaceMCPFileIsAskedAsAFormWhereTheClientHasForms: the question
// of a workspace .mcp.json (no tool call's) comes as elicitation/create
// tied to the session, with the choices of a permission request, to a
// client that declares forms; declined, the servers do not start and the
// turn goes on. A client without forms is asked with
// session/request_permission.
func TestWorkspaceMCPFileIsAskedAsAFormWhereTheClientHasForms(t *testing.T) {
	for _, tc := range []struct {
		caps     string
		elicited bool
	}{{`{"elicitation":{"form":{}}}`, true}, {`{}`, false}} {
		t.Run(tc.caps, func(t *testing.T) {
			root := workspaceRoot(t)
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			mcpFile := `{"mcpServers":{"docs":{"command":"/nonexistent/mcp-docs-server","args":[]}}}`
			if err := os.WriteFile(filepath.Join(root, ".mcp.json"), []byte(mcpFile), 0o644); err != nil {
				t.Fatal(err)
			}
			c := v1Agent(t, filepath.Join(t.TempDir(), "a.db"), root, nil, nil)
			c.permission = "reject_once"
			c.initialize(tc.caps)
			id := c.newSession(root)
			if r := c.prompt(id, textBlock("hello")); r.Error != nil {
				t.Fatal(r.Error.Message)
			}
			var forms, perms []wireMsg
			for _, m := range c.Seen() {
				switch m.Method {
				case "elicitation/create":
					forms = append(forms, m)
				case "session/request_permission":
					perms = append(perms, m)
				}
			}
			if !tc.elicited {
				if len(forms) != 0 || len(perms) != 1 || !strings.Contains(string(perms[0].Params), ".mcp.json") {
					t.Fatalf("%d forms, permission requests %v; want one permission request about .mcp.json", len(forms), perms)
				}
				return
			}
			if len(forms) != 1 || len(perms) != 0 {
				t.Fatalf("%d forms and %d permission requests; want one form", len(forms), len(perms))
			}
			var p map[string]any
			_ = json.Unmarshal(forms[0].Params, &p)
			if p["sessionId"] != id || p["mode"] != "form" || p["_meta"] != nil || !strings.Contains(fmt.Sprint(p["message"]), ".mcp.json") {
				t.Errorf("elicitation %s; want a form of the session about .mcp.json", forms[0].Params)
			}
			choices := fmt.Sprint(get(p, "requestedSchema", "properties", "decision", "oneOf"))
			for _, want := range []string{"allow_once", "allow_always", "reject_once"} {
				if !strings.Contains(choices, want) {
					t.Errorf("choices %s lack %s", choices, want)
				}
			}
		})
	}
}

// TestAdditionalDirectoriesWidenOnlyTheirSession: a session given an
// additional root reads a file in it; a session of the same cwd without it
// cannot; session/list reports the session's roots; a relative one is
// -32602.
func TestAdditionalDirectoriesWidenOnlyTheirSession(t *testing.T) {
	root, other := workspaceRoot(t), t.TempDir()
	notes := filepath.Join(other, "notes.txt")
	if err := os.WriteFile(notes, []byte("the other root's notes: OTHER-ROOT-42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fakemodel.Script{Turns: []fakemodel.Turn{
		{Match: &fakemodel.Match{LastToolResult: "OTHER-ROOT-42"}, Times: -1, Text: "read the other root"},
		{Match: &fakemodel.Match{LastUser: "READOTHER"}, Times: 1, ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Arguments: fakemodel.Args(`{"path":"` + notes + `"}`)}}},
		{Match: &fakemodel.Match{LastUser: "READOTHER"}, Times: 1, ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Arguments: fakemodel.Args(`{"path":"` + notes + `"}`)}}},
		{Times: -1, Text: "could not read it"},
	}}
	c := scriptedAgent(t, script, filepath.Join(t.TempDir(), "a.db"), nil, nil)
	init := c.initialize(`{}`)
	if get(init, "agentCapabilities", "sessionCapabilities", "additionalDirectories") == nil {
		t.Fatalf("additionalDirectories not advertised: %v", init)
	}
	var wide struct {
		SessionID string `json:"sessionId"`
	}
	c.ok("session/new", map[string]any{"cwd": root, "additionalDirectories": []string{other}, "mcpServers": []any{}}, &wide)
	narrow := c.newSession(root)
	c.prompt(wide.SessionID, textBlock("READOTHER: the notes"))
	c.prompt(narrow, textBlock("READOTHER: the notes"))
	if got := c.agentText(wide.SessionID); !strings.Contains(got, "read the other root") {
		t.Errorf("the session with the additional root answered %q", got)
	}
	if got := c.agentText(narrow); strings.Contains(got, "read the other root") {
		t.Errorf("the session without it read the other root: %q", got)
	}
	var l struct {
		Sessions []struct {
			SessionID string   `json:"sessionId"`
			Extra     []string `json:"additionalDirectories"`
		} `json:"sessions"`
	}
	c.ok("session/list", map[string]any{"cwd": root}, &l)
	for _, s := range l.Sessions {
		if s.SessionID == wide.SessionID && (len(s.Extra) != 1 || s.Extra[0] != other) {
			t.Errorf("listed roots %v; want %s", s.Extra, other)
		}
	}
	if m := c.call("session/new", map[string]any{"cwd": root, "additionalDirectories": []string{"relative/dir"}, "mcpServers": []any{}}); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("a relative additional root: %+v", m.Error)
	}
}
