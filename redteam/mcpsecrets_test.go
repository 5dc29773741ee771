package redteam

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/lsp/lsptest"
)

const famMCP = "MCP secrets"

// acpClient is an ACP client (Zed's part): it records every update and
// allows every tool call once.
type acpClient struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	offersNothing
}

func (c *acpClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	return nil
}

func (c *acpClient) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow_once")}, nil
}

func (c *acpClient) updatesJSON() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(c.updates)
	return string(b)
}

// acpRun is one ACP turn against a real agent over pipes: session/new
// with servers, one prompt, the scripted model's turns.
type acpRun struct {
	client *acpClient
	model  *fakemodel.Server
	root   string
	db     string
	logs   *syncLog
}

func runACP(t *testing.T, turns []fakemodel.Turn, servers []sdk.McpServer, text string) *acpRun {
	t.Helper()
	model, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	r := &acpRun{client: &acpClient{}, model: model, root: t.TempDir(), db: filepath.Join(t.TempDir(), "agentls.db"), logs: &syncLog{}}
	settings := session.Defaults()
	settings.BaseURL, settings.Model, settings.Validate = model.URL(), "test-model", "off"
	ar, cw := io.Pipe()
	cr, aw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = acp.Serve(ctx, ar, aw, acp.Options{Settings: settings, Getenv: func(k string) string {
			if k == session.EnvAPIKey {
				return apiKey
			}
			return ""
		}, DBPath: r.db, Logger: slog.New(slog.NewTextHandler(io.MultiWriter(r.logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug}))})
	}()
	t.Cleanup(func() { cancel(); _ = cw.Close(); _ = aw.Close(); <-done })
	conn := sdk.NewClientSideConnection(r.client, cw, cr)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	tctx, tcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer tcancel()
	if _, err := conn.Initialize(tctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(tctx, sdk.NewSessionRequest{Cwd: r.root, McpServers: servers})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prompt(tctx, sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}}); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	return r
}

// leaks lists where each secret was found: the model's requests, the ACP
// updates, the log, the session store and every file under .agentls.
func (r *acpRun) leaks(secrets map[string]string) []string {
	var bodies strings.Builder
	for _, q := range r.model.Requests() {
		bodies.Write(q.Body)
	}
	sinks := map[string]string{"the model's requests": bodies.String(), "the ACP updates": r.client.updatesJSON(), "the log": r.logs.String()}
	for _, p := range []string{r.db, r.db + "-wal"} {
		if b, err := os.ReadFile(p); err == nil {
			sinks[filepath.Base(p)] = string(b)
		}
	}
	return whereSecretsReached(secrets, r.root, sinks)
}

// verdict fails the attempt unless the model got the tool's result (want
// is in a request: the attack ran), and is escaped when a secret reached
// a sink.
func (r *acpRun) verdict(t *testing.T, want string, secrets map[string]string) outcome {
	t.Helper()
	var bodies strings.Builder
	for _, q := range r.model.Requests() {
		bodies.Write(q.Body)
	}
	if !strings.Contains(bodies.String(), want) {
		t.Fatalf("no model request holds %q: the attack did not run (%d requests)", want, len(r.model.Requests()))
	}
	if l := r.leaks(secrets); len(l) > 0 {
		return escaped("%s", strings.Join(l, "; "))
	}
	return held("the model got the tool's result; no secret in its requests, the ACP updates, the log or the store")
}

// headerServer is an HTTP MCP server whose tool whoami answers with the
// Authorization header its request carried, and which records every
// request's Authorization.
func headerServer(t *testing.T) (*httptest.Server, func() []string) {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "echoing"}, nil)
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "whoami", Description: "Say which credentials the call came with."},
		func(_ context.Context, req *mcpsdk.CallToolRequest, _ struct{}) (*mcpsdk.CallToolResult, any, error) {
			auth := ""
			if req.Extra != nil && req.Extra.Header != nil {
				auth = req.Extra.Header.Get("Authorization")
			}
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "whoami: called with " + auth}}}, nil, nil
		})
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)
	var mu sync.Mutex
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestMCPSecrets: the env values and headers an ACP client gives its MCP
// servers in session/new are secrets at every sink, and an HTTP server's
// redirect to another origin does not carry them there.
func TestMCPSecrets(t *testing.T) {
	bin := lsptest.MCPTestServer(t)
	vaultID := "Zq81" + "LmXw27PkVr4Nd9Tq"   // generated-looking, under an ordinary name
	ghToken := "gh-acp-" + "Wq3Lm8Zx2Vk7Rt5" // under a name that marks a secret
	bearer := "acp-bearer-" + "Kx4Qm9Lw2Zr7"
	done := fakemodel.Turn{Text: "Done.", FinishReason: "stop"}

	attempt(t, famMCP, "an ACP server's env value under an ordinary name, read back by its tool", func(t *testing.T) outcome {
		r := runACP(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__vault__env", `{"name":"VAULT_ID"}`)}},
			done,
		}, []sdk.McpServer{{Stdio: &sdk.McpServerStdio{Name: "vault", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{{Name: "VAULT_ID", Value: vaultID}}}}},
			"read VAULT_ID with the vault server")
		return r.verdict(t, "VAULT_ID=", map[string]string{"VAULT_ID's value": vaultID})
	})
	attempt(t, famMCP, "an ACP server's GITHUB_TOKEN, read back by its tool", func(t *testing.T) outcome {
		r := runACP(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__gh__env", `{"name":"GITHUB_TOKEN"}`)}},
			done,
		}, []sdk.McpServer{{Stdio: &sdk.McpServerStdio{Name: "gh", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{{Name: "GITHUB_TOKEN", Value: ghToken}}}}},
			"read GITHUB_TOKEN with the gh server")
		return r.verdict(t, "GITHUB_TOKEN=", map[string]string{"GITHUB_TOKEN's value": ghToken})
	})
	attempt(t, famMCP, "an ACP HTTP server's Authorization header, echoed by its tool", func(t *testing.T) outcome {
		hs, _ := headerServer(t)
		r := runACP(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__echo__whoami", `{}`)}},
			done,
		}, []sdk.McpServer{{Http: &sdk.McpServerHttpInline{Name: "echo", Url: hs.URL, Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer " + bearer}}}}},
			"who am I on the echo server?")
		return r.verdict(t, "whoami: called with", map[string]string{"the bearer token": bearer})
	})
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		attempt(t, famMCP, fmt.Sprintf("an ACP HTTP server answers %d to another origin", code), func(t *testing.T) outcome {
			other, seen := headerServer(t)
			first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.Path, code)
			}))
			t.Cleanup(first.Close)
			r := runACP(t, []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__moved__whoami", `{}`)}},
				done,
			}, []sdk.McpServer{{Http: &sdk.McpServerHttpInline{Name: "moved", Url: first.URL + "/mcp", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer " + bearer}}}}},
				"who am I on the moved server?")
			got := seen()
			if len(got) == 0 {
				t.Fatalf("the other origin got no request: the redirect was not followed")
			}
			for _, a := range got {
				if strings.Contains(a, bearer) {
					return escaped("the other origin got Authorization %q", a)
				}
			}
			if l := r.leaks(map[string]string{"the bearer token": bearer}); len(l) > 0 {
				return escaped("%s", strings.Join(l, "; "))
			}
			return r.verdict(t, "whoami: called with", nil)
		})
	}
}
