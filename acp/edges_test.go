package acp_test

import (
	"bufio"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/session"
)

// rawConn speaks raw lines to an agent over pipes.
type rawConn struct {
	w   io.Writer
	out *bufio.Scanner
}

func rawAgent(t *testing.T, getenv func(string) string) *rawConn {
	t.Helper()
	settings := session.Defaults()
	settings.BaseURL = "https://models.invalid/v1" // not loopback: a key is needed
	cw, cr, _ := servePipes(t, acp.Options{Settings: settings, Getenv: getenv, DBPath: filepath.Join(t.TempDir(), "agentls.db")})
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &rawConn{w: cw, out: sc}
}

type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// send writes line and returns the next reply (notifications skipped).
func (c *rawConn) send(t *testing.T, line string) reply {
	t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.AfterFunc(20*time.Second, func() { t.Error("no reply within 20 s") })
	defer deadline.Stop()
	for c.out.Scan() {
		var r reply
		if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
			t.Fatalf("the agent wrote a line that is not JSON: %q", c.out.Text())
		}
		if r.Method != "" {
			continue
		}
		return r
	}
	t.Fatalf("the agent closed its output: %v", c.out.Err())
	return reply{}
}

func TestProtocolEdges(t *testing.T) {
	noKey := func(string) string { return "" }
	c := rawAgent(t, noKey)
	cwd := t.TempDir()

	r := c.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"`+cwd+`","mcpServers":[]}}`)
	if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "initialize") {
		t.Errorf("session/new before initialize: %+v; want -32600 saying initialize first", r.Error)
	}
	r = c.send(t, `{"jsonrpc":"2.0","id":2,"method":"initialize",`)
	if r.Error == nil || r.Error.Code != -32700 || string(r.ID) != "null" {
		t.Errorf("a malformed line: id %s error %+v; want -32700 with id null", r.ID, r.Error)
	}
	r = c.send(t, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true}}}}`)
	if r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	var init sdk.InitializeResponse
	if err := json.Unmarshal(r.Result, &init); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range init.AuthMethods {
		switch {
		case m.Agent != nil:
			ids[m.Agent.Id] = true
		case m.Terminal != nil:
			ids[m.Terminal.Id] = strings.Join(m.Terminal.Args, " ") == "login"
		}
	}
	if !ids["api-key-env"] || !ids["agentls-login"] {
		t.Errorf("authMethods %s; want the environment's key and a terminal login running `login`", r.Result)
	}
	sc := init.AgentCapabilities.SessionCapabilities
	if sc.Resume == nil || sc.Close == nil || sc.List == nil || !init.AgentCapabilities.LoadSession {
		t.Errorf("session capabilities %+v; want load, list, resume and close", sc)
	}

	r = c.send(t, `{"jsonrpc":"2.0","id":4,"method":"authenticate","params":{"methodId":"no-such-method"}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "unknown auth method") {
		t.Errorf("authenticate with an unknown method: %+v; want an error", r.Error)
	}
	r = c.send(t, `{"jsonrpc":"2.0","id":5,"method":"authenticate","params":{"methodId":"api-key-env"}}`)
	if r.Error == nil || r.Error.Code != -32000 || r.Error.Message != "no API key: set OPENAI_API_KEY or run agentls login" {
		t.Errorf("authenticate without a key: %+v; want auth_required saying what to do", r.Error)
	}

	r = c.send(t, `{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"`+cwd+`","mcpServers":[]}}`)
	if r.Error != nil {
		t.Fatalf("session/new: %+v", r.Error)
	}
	var ns sdk.NewSessionResponse
	_ = json.Unmarshal(r.Result, &ns)

	big := strings.Repeat("x", 257<<10)
	r = c.send(t, `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"`+string(ns.SessionId)+`","prompt":[{"type":"text","text":"`+big+`"}]}}`)
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "too large") {
		t.Errorf("a 257 KiB prompt: %+v; want -32602", r.Error)
	}
	r = c.send(t, `{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"`+string(ns.SessionId)+`","prompt":[{"type":"text","text":"hello"}]}}`)
	if r.Error == nil || r.Error.Code != -32000 || r.Error.Message != "no API key: set OPENAI_API_KEY or run agentls login" {
		t.Errorf("a prompt without a key: %+v; want auth_required whose message says what to do", r.Error)
	}
	r = c.send(t, `[1,2]`)
	if r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("a batch: %+v; want -32600", r.Error)
	}
}
