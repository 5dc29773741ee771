package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverBin is the test MCP server (testdata/mcpserver), built once with
// the same Go SDK.
var serverBin string

func TestMain(m *testing.M) {
	// Outside /tmp: the sandbox gives each server a private /tmp.
	cache, err := os.UserCacheDir()
	if err != nil {
		panic(err)
	}
	_ = os.MkdirAll(cache, 0o755)
	dir, err := os.MkdirTemp(cache, "agentls-mcp-test")
	if err != nil {
		panic(err)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	// The test binary's own go: building is the test's setup, not a program
	// the server starts.
	if out, err := exec.Command("go", "build", "-o", serverBin, "./testdata/mcpserver").CombinedOutput(); err != nil {
		panic("building testdata/mcpserver: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// approvals records what is asked and answers with answer.
type approvals struct {
	mu     sync.Mutex
	asked  []tools.ApprovalRequest
	answer tools.Decision
}

func (a *approvals) Approve(_ context.Context, r tools.ApprovalRequest) (tools.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	return a.answer, nil
}

func (a *approvals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

func stdio(name string, args ...string) ServerConfig {
	return ServerConfig{Name: name, Command: serverBin, Args: args, Source: FromSettings}
}

type fixture struct {
	m      *Manager
	launch Launch
	cmds   *tools.Commands
}

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	f := &fixture{m: NewManager(nil), cmds: tools.NewCommands()}
	f.launch = Launch{Dir: dir, Roots: []string{dir}, Commands: f.cmds}
	t.Cleanup(f.m.Close)
	return f
}

func (f *fixture) tools(t *testing.T, ap tools.Approver, cfgs ...ServerConfig) map[string]*Tool {
	t.Helper()
	list, errs := f.m.Tools(context.Background(), cfgs, f.launch, ap)
	for _, err := range errs {
		t.Errorf("Tools: %v", err)
	}
	out := map[string]*Tool{}
	for _, tl := range list {
		out[tl.Name()] = tl.(*Tool)
	}
	return out
}

func call(t *testing.T, tl *Tool, args string) tools.Result {
	t.Helper()
	ctx := tools.WithCall(context.Background(), tools.Call{ID: "call-1", Tool: tl.Name(), Args: json.RawMessage(args)})
	res, err := tl.Run(ctx, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): Go error %v", tl.Name(), args, err)
	}
	return res
}

func TestToolsListedAndCalled(t *testing.T) {
	f := newFixture(t)
	got := f.tools(t, nil, stdio("test"))
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"mcp__test__add", "mcp__test__big", "mcp__test__crash", "mcp__test__echo", "mcp__test__env", "mcp__test__fail", "mcp__test__flood", "mcp__test__grow", "mcp__test__hang"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v; want %v", names, want)
	}
	echo := got["mcp__test__echo"]
	if eff := echo.Effects(); eff != tools.External || echo.ReadOnly() {
		t.Errorf("Effects() = %v, ReadOnly() = %v; want External, false", eff, echo.ReadOnly())
	}
	var schema struct {
		Type       string
		Properties map[string]any
	}
	if err := json.Unmarshal(echo.Schema(), &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
		t.Errorf("echo schema = %s (%v); want an object with property text", echo.Schema(), err)
	}
	if r := call(t, echo, `{"text":"hello"}`); r.IsError || r.Text != "echo: hello" {
		t.Errorf("echo = %+v; want echo: hello", r)
	}
	if r := call(t, got["mcp__test__add"], `{"a":2,"b":40}`); r.Text != "42" {
		t.Errorf("add = %+v; want 42", r)
	}
	if r := call(t, got["mcp__test__fail"], `{}`); !r.IsError || !strings.Contains(r.Text, "the thing is broken") {
		t.Errorf("fail = %+v; want an error result with the server's text", r)
	}
	if r := call(t, echo, `[1,2]`); !r.IsError || !strings.Contains(r.Text, "JSON object") {
		t.Errorf("echo([1,2]) = %+v; want an error result asking for an object", r)
	}
	if n := f.cmds.Running(); n != 1 {
		t.Errorf("running processes = %d; want the one server", n)
	}
	f.m.Close()
	if n := f.cmds.Running(); n != 0 {
		t.Errorf("running processes after Close = %d; want 0", n)
	}
	if r := call(t, echo, `{"text":"again"}`); !r.IsError || !strings.Contains(r.Text, "stopped") {
		t.Errorf("echo after Close = %+v; want an error saying the server was stopped", r)
	}
}

func TestApprovals(t *testing.T) {
	for _, tc := range []struct {
		answer    tools.Decision
		wantError bool
	}{
		{tools.Deny, true},
		{tools.AllowOnce, false},
	} {
		f := newFixture(t)
		user := &approvals{answer: tc.answer}
		got := f.tools(t, user, stdio("test"))
		r1 := call(t, got["mcp__test__echo"], `{"text":"one"}`)
		r2 := call(t, got["mcp__test__add"], `{"a":1,"b":1}`)
		if n := user.count(); n != 2 {
			t.Errorf("answer %v: asked %d times; want 2 (every call asks; the host's policy remembers)", tc.answer, n)
		}
		if r1.IsError != tc.wantError || r2.IsError != tc.wantError {
			t.Errorf("answer %v: results %+v, %+v; error want %v", tc.answer, r1, r2, tc.wantError)
		}
		if tc.wantError && (!strings.Contains(r1.Text, "the user denied") || strings.Contains(r1.Text, "echo: one")) {
			t.Errorf("denied result = %q", r1.Text)
		}
		q := user.asked[0]
		if q.Tool != "mcp__test__echo" || q.Effects != tools.External || q.CallID != "call-1" || !strings.Contains(q.Summary, `{"text":"one"}`) {
			t.Errorf("approval request = %+v; want the tool's name, its effect, its call id and its arguments", q)
		}
	}
}

func TestResultsBounded(t *testing.T) {
	f := newFixture(t)
	got := f.tools(t, nil, stdio("test"))
	r := call(t, got["mcp__test__big"], `{"lines":20000}`)
	if len(r.Text) > MaxResultBytes+200 {
		t.Errorf("result of %d bytes; want at most %d", len(r.Text), MaxResultBytes+200)
	}
	for _, want := range []string{"line 000001 of", "line 020000 of", "bytes cut"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("bounded result lacks %q (head, tail and the marker)", want)
		}
	}
	t.Logf("20000 lines (%d bytes) given to the model as %d bytes", 20000*len("line 000001 of the big answer\n"), len(r.Text))
}

func TestServerEnvironment(t *testing.T) {
	f := newFixture(t)
	t.Setenv("OPENAI_API_KEY", "sk-not-for-servers-123456")
	t.Setenv("AGENTLS_MCP_TEST_SECRET", "from-agentls-env")
	cfg := stdio("test")
	cfg.Env = map[string]string{"SERVICE_TOKEN": "${AGENTLS_MCP_TEST_SECRET}", "PLAIN": "${UNSET_VAR_X:-fallback}"}
	got := f.tools(t, nil, cfg)
	env := got["mcp__test__env"]
	for _, tc := range []struct{ name, want string }{
		{"SERVICE_TOKEN", "SERVICE_TOKEN=from-agentls-env"},
		{"PLAIN", "PLAIN=fallback"},
		{"OPENAI_API_KEY", "OPENAI_API_KEY is not set"},
		{"AGENTLS_MCP_TEST_SECRET", "AGENTLS_MCP_TEST_SECRET is not set"},
	} {
		if r := call(t, env, `{"name":"`+tc.name+`"}`); r.Text != tc.want {
			t.Errorf("env(%s) = %q; want %q", tc.name, r.Text, tc.want)
		}
	}
}

func TestCrashMidCall(t *testing.T) {
	f := newFixture(t)
	got := f.tools(t, nil, stdio("test"))
	start := time.Now()
	r := call(t, got["mcp__test__crash"], `{}`)
	took := time.Since(start)
	if !r.IsError || !strings.Contains(r.Text, "ended during the call") || !strings.Contains(r.Text, "exited with code 3") ||
		!strings.Contains(r.Text, "crashing in the middle of a call") {
		t.Errorf("crash = %q; want an error with the exit code and the server's stderr", r.Text)
	}
	if took > 5*time.Second {
		t.Errorf("the crash was reported after %s; want at once", took)
	}
	// The next call starts the server again.
	if r := call(t, got["mcp__test__echo"], `{"text":"back"}`); r.Text != "echo: back" {
		t.Errorf("echo after the crash = %+v; want the server started again", r)
	}
	t.Logf("crash reported in %s", took.Round(time.Millisecond))
}

func TestHangingCallTimesOut(t *testing.T) {
	f := newFixture(t)
	cfg := stdio("test")
	cfg.Timeout = 1
	got := f.tools(t, nil, cfg)
	start := time.Now()
	r := call(t, got["mcp__test__hang"], `{}`)
	took := time.Since(start)
	if !r.IsError || !strings.Contains(r.Text, "did not answer within 1s") {
		t.Errorf("hang = %q; want a timeout error", r.Text)
	}
	if took < time.Second || took > 4*time.Second {
		t.Errorf("the hanging call ended after %s; want about 1s", took)
	}
	// The server still answers other calls.
	if r := call(t, got["mcp__test__echo"], `{"text":"still here"}`); r.Text != "echo: still here" {
		t.Errorf("echo after a timeout = %+v", r)
	}
	// A cancelled task does not wait for the call's timeout.
	cfg.Timeout = 60
	got = f.tools(t, nil, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := got["mcp__test__hang"].Run(ctx, json.RawMessage(`{}`)); err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("cancelled hang: err %v after %s; want the context's error at once", err, time.Since(start))
	}
}

func TestServersThatDoNotStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want []string
	}{
		{"exits", stdio("broken", "-fail"), []string{`"broken" did not start`, "exited with code 2", "cannot open its database"}},
		{"never answers", func() ServerConfig { c := stdio("silent", "-hang"); c.StartTimeout = 1; return c }(), []string{`"silent" did not answer within 1s`}},
		{"no such program", ServerConfig{Name: "missing", Command: "agentls-no-such-mcp-server", Source: FromSettings}, []string{`"missing" did not start`, "not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			start := time.Now()
			list, errs := f.m.Tools(context.Background(), []ServerConfig{tc.cfg, stdio("test")}, f.launch, nil)
			took := time.Since(start)
			if len(errs) != 1 {
				t.Fatalf("errors = %v; want one", errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("error %q lacks %q", errs[0], w)
				}
			}
			if len(list) != 9 {
				t.Errorf("%d tools; want the 9 of the server that works", len(list))
			}
			if took > 6*time.Second {
				t.Errorf("took %s; want within the start timeout", took)
			}
			if n := f.cmds.Running(); n != 1 {
				t.Errorf("%d processes running; want only the server that works", n)
			}
			start = time.Now()
			_, errs = f.m.Tools(context.Background(), []ServerConfig{tc.cfg}, f.launch, nil)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want[0]) {
				t.Fatalf("second listing: %v; want the same error", errs)
			}
			cached := strings.Contains(errs[0].Error(), "tried again")
			if tc.name == "never answers" {
				// The next task does not wait for a hanging one again.
				if !cached || time.Since(start) > 200*time.Millisecond {
					t.Errorf("second listing: %v after %s; want the same error at once", errs, time.Since(start))
				}
			} else if cached {
				// One that exited is started again: it may work now.
				t.Errorf("second listing: %v; want the server started again, not a cached failure", errs)
			}
		})
	}
}

func TestToolListChangedNextTask(t *testing.T) {
	f := newFixture(t)
	first := f.tools(t, nil, stdio("test"))
	if r := call(t, first["mcp__test__grow"], `{}`); r.IsError {
		t.Fatalf("grow = %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		next := f.tools(t, nil, stdio("test"))
		if next["mcp__test__extra"] != nil {
			if r := call(t, next["mcp__test__extra"], `{}`); r.Text != "extra tool here" {
				t.Errorf("extra = %+v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the next task's tools never included the added tool")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(first) != 9 {
		t.Errorf("the first task's tools changed to %d; want 9", len(first))
	}
}

func TestStreamableHTTPServer(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "http-test"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "shout", Description: "Upper-case the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var mu sync.Mutex
	var auth []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	t.Setenv("AGENTLS_MCP_HTTP_TOKEN", "abc123")
	cfgs, err := ParseServers([]byte(`{"mcpServers": {"remote": {"type": "http", "url": "`+hs.URL+`", "headers": {"Authorization": "Bearer ${AGENTLS_MCP_HTTP_TOKEN}"}}}}`), FromSettings)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	defer f.m.Close() // before the server closes: it waits for the client's event stream
	got := f.tools(t, nil, cfgs...)
	if r := call(t, got["mcp__remote__shout"], `{"text":"quiet"}`); r.Text != "QUIET" {
		t.Errorf("shout = %+v; want QUIET", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || auth[0] != "Bearer abc123" {
		t.Errorf("Authorization headers = %v; want the configured one, expanded", auth)
	}
	// A server that is not there: a clear error, no tools.
	dead := ServerConfig{Name: "gone", Type: "http", URL: "http://127.0.0.1:1/mcp", Source: FromSettings}
	if _, errs := f.m.Tools(context.Background(), []ServerConfig{dead}, f.launch, nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "could not be reached") {
		t.Errorf("unreachable server: %v", errs)
	}
}

func TestParseServers(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		n       int
	}{
		{`{"mcpServers": {"a": {"command": "x", "args": ["-y"], "env": {"K": "v"}}, "b": {"type": "http", "url": "https://h/mcp"}}}`, "", 2},
		{`{"a": {"command": "x"}}`, "", 1},
		{`{"bad name": {"command": "x"}}`, "a name is", 0},
		{`{"a": {"type": "http"}}`, "needs a url", 0},
		{`{"a": {"args": ["x"]}}`, "needs a command", 0},
		{`{"a": {"type": "ws", "url": "x"}}`, "unknown type", 0},
		{`[1]`, "mcp servers", 0},
	} {
		got, err := ParseServers([]byte(tc.in), FromWorkspace)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseServers(%s) = %v; want error %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != tc.n {
			t.Errorf("ParseServers(%s) = %v, %v; want %d servers", tc.in, got, err, tc.n)
		}
	}
	c := ServerConfig{Name: "gh", Command: "gh-mcp", Env: map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, Source: FromWorkspace}
	if d := c.Describe(); !strings.Contains(d, "without network") || !strings.Contains(d, "${GITHUB_TOKEN}") || !strings.Contains(d, "env GITHUB_TOKEN") {
		t.Errorf("Describe() = %q; want the network, the env names and the variables it reads", d)
	}
	if d := (ServerConfig{Name: "gh", Command: "gh-mcp", Source: FromSettings}).Describe(); !strings.Contains(d, "as your own program (no sandbox)") {
		t.Errorf("Describe() = %q; want it to say the user's server runs as their program", d)
	}
	if d := (ServerConfig{Name: "gh", Command: "gh-mcp"}).Describe(); !strings.Contains(d, "in the sandbox") {
		t.Errorf("Describe() = %q; want a server of no known source in the sandbox", d)
	}
	if c.Source = FromSettings; !c.NetworkAllowed() {
		t.Error("a server of the user's settings has no network by default; want network")
	}
}

// TestOneLauncherForServers: the package starts no program itself; the
// SDK's CommandTransport (os/exec, outside the sandbox) is never used.
func TestOneLauncherForServers(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"CommandTransport", `"os/exec"`} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s: stdio servers start through tools.Run only", f, bad)
			}
		}
	}
}

// everythingServer is the npm reference server
// @modelcontextprotocol/server-everything, installed by make install
// (npm ci in editors/testing/mcp, from its package-lock.json), copied into
// root: the sandbox shows a server the roots and the caches, and a
// checkout under /tmp (CI) is hidden by the private /tmp.
func everythingServer(t *testing.T, root string) ServerConfig {
	t.Helper()
	modules, err := filepath.Abs("../../editors/testing/mcp/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	const entry = "@modelcontextprotocol/server-everything/dist/index.js"
	if _, err := os.Stat(filepath.Join(modules, entry)); err != nil {
		t.Fatalf("the npm MCP server is not installed (%v): run make install (or npm ci in editors/testing/mcp)", err)
	}
	if out, err := exec.Command("cp", "-a", modules, filepath.Join(root, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("copy the npm MCP server into the workspace: %v: %s", err, out)
	}
	if _, err := tools.LookPath("node", nil); err != nil {
		t.Fatalf("node: %v: run make install", err)
	}
	return ServerConfig{Name: "everything", Command: "node", Args: []string{filepath.Join(root, "node_modules", entry), "stdio"}, Source: FromSettings}
}

// TestNPMServerEverything: the reference server from npm (Node) through
// the launcher and the sandbox: its tools listed with their schemas,
// called (text, a sum, an image named not shown), approved and denied,
// and a long operation bounded by the call timeout.
func TestNPMServerEverything(t *testing.T) {
	f := newFixture(t)
	cfg := everythingServer(t, f.launch.Roots[0])
	cfg.Timeout = 2
	user := &approvals{answer: tools.AllowOnce}
	start := time.Now()
	got := f.tools(t, user, cfg)
	t.Logf("server-everything started and listed %d tools in %s", len(got), time.Since(start).Round(time.Millisecond))
	for _, name := range []string{"mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__get-tiny-image", "mcp__everything__trigger-long-running-operation"} {
		if got[name] == nil {
			t.Fatalf("no tool %s among %d", name, len(got))
		}
	}
	if s := string(got["mcp__everything__echo"].Schema()); !strings.Contains(s, `"message"`) {
		t.Errorf("echo schema = %s; want its message property", s)
	}
	if r := call(t, got["mcp__everything__echo"], `{"message":"from agentls"}`); r.IsError || !strings.Contains(r.Text, "from agentls") {
		t.Errorf("echo = %+v", r)
	}
	if r := call(t, got["mcp__everything__get-sum"], `{"a":19,"b":23}`); r.IsError || !strings.Contains(r.Text, "42") {
		t.Errorf("get-sum = %+v", r)
	}
	if r := call(t, got["mcp__everything__get-tiny-image"], `{}`); r.IsError || !strings.Contains(r.Text, "[image image/png") {
		t.Errorf("get-tiny-image = %+v; want the image named, not shown", r)
	}
	if n := user.count(); n != 3 {
		t.Errorf("asked %d times for 3 calls; want 3", n)
	}
	user.answer = tools.Deny
	if r := call(t, got["mcp__everything__get-annotated-message"], `{"messageType":"success"}`); !r.IsError || !strings.Contains(r.Text, "denied") {
		t.Errorf("denied call = %+v", r)
	}
	user.answer = tools.AllowOnce
	start = time.Now()
	r := call(t, got["mcp__everything__trigger-long-running-operation"], `{"duration":30,"steps":5}`)
	if !r.IsError || !strings.Contains(r.Text, "did not answer within 2s") || time.Since(start) > 6*time.Second {
		t.Errorf("long operation = %q after %s; want a timeout after 2s", r.Text, time.Since(start))
	}
}
