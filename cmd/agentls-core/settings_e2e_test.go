package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestLoginThenEveryFace: a user runs `agentls login --base-url URL`, types
// the key, and writes a user settings file; then `agentls run`,
// `agentls serve` (a task from a plain LSP client that sends no settings)
// and `agentls acp` each reach the model service with the stored key and
// the file's model. The processes are the real binary, with no key, base
// URL or model in their environment; the model service is a loopback
// server that records each request's Authorization header.
func TestLoginThenEveryFace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const key = "sk-login-e2e-5b1f"
	bin := buildAgentls(t, t.TempDir())
	model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "A small module.", FinishReason: "stop", Times: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	cfgHome := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + cfgHome, "XDG_CACHE_HOME=" + t.TempDir(), "HOME=" + t.TempDir()}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLS_MODEL", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "HOME":
		default:
			env = append(env, kv)
		}
	}
	login := exec.Command(bin, "login", "--base-url", model.URL())
	login.Env, login.Stdin = env, strings.NewReader(key+"\n")
	if out, err := login.CombinedOutput(); err != nil {
		t.Fatalf("agentls login: %v\n%s", err, out)
	}
	// The user settings file: the model name shows it applied.
	if err := os.WriteFile(filepath.Join(cfgHome, "agentls", "settings.json"), []byte(`{"model": "model-from-user-file", "validate": "off"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// reached checks that requests after the first from of the model's
	// came with the stored key and the file's model.
	reached := func(t *testing.T, face string, from int) {
		t.Helper()
		reqs := model.Requests()[from:]
		if len(reqs) == 0 {
			t.Fatalf("%s: no request reached the model service", face)
		}
		for _, r := range reqs {
			if r.APIKey != key {
				t.Errorf("%s: a request came with key %q; want the stored one", face, r.APIKey)
			}
			var body struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal(r.Body, &body)
			if body.Model != "model-from-user-file" {
				t.Errorf("%s: a request asked for model %q; want the user settings file's", face, body.Model)
			}
		}
	}

	t.Run("run", func(t *testing.T) {
		from := len(model.Requests())
		cmd := exec.Command(bin, "run", "--workspace", root, "--no-record", "what is this module?")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("agentls run: %v\n%s", err, out)
		}
		if strings.Contains(string(out), key) {
			t.Error("agentls run printed the key")
		}
		reached(t, "agentls run", from)
	})

	t.Run("serve", func(t *testing.T) {
		from := len(model.Requests())
		p := lsptest.StartProcess(t, bin, []string{"serve", "--log-file", "-"}, env, lsptest.Config{Roots: []string{root}})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := p.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		res, _, err := p.ExecuteCommand(ctx, lsp.CommandRun, map[string]any{"prompt": "what is this module?", "mode": "ask"})
		if err != nil {
			t.Fatalf("agentls.run: %v; stderr:\n%s", err, p.Stderr())
		}
		var reply lsp.RunReply
		if err := json.Unmarshal(res, &reply); err != nil || reply.Status != "completed" {
			t.Fatalf("agentls.run: %s (%v); stderr:\n%s", res, err, p.Stderr())
		}
		reached(t, "agentls serve", from)
	})

	t.Run("acp", func(t *testing.T) {
		from := len(model.Requests())
		cmd := exec.Command(bin, "acp")
		cmd.Env = env
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
		rd := bufio.NewReader(outPipe)
		send := func(id int, method string, params any) {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
			fmt.Fprintf(in, "%s\n", b)
		}
		// await reads until the answer to id, answering what the agent asks
		// with an error (this client offers nothing).
		await := func(id int) map[string]any {
			t.Helper()
			for {
				line, err := rd.ReadBytes('\n')
				if err != nil {
					t.Fatalf("stdout ended before answer %d: %v; stderr:\n%s", id, err, stderr.String())
				}
				var m map[string]any
				if err := json.Unmarshal(line, &m); err != nil {
					t.Fatalf("stdout line is not JSON: %q", line)
				}
				if m["method"] != nil && m["id"] != nil {
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32601, "message": "not offered"}})
					fmt.Fprintf(in, "%s\n", b)
					continue
				}
				if got, ok := m["id"].(float64); ok && int(got) == id {
					return m
				}
			}
		}
		send(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
		await(1)
		send(2, "session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
		m := await(2)
		sid, _ := m["result"].(map[string]any)["sessionId"].(string)
		if sid == "" {
			t.Fatalf("session/new: %v", m)
		}
		send(3, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "what is this module?"}}})
		if m := await(3); m["error"] != nil {
			t.Fatalf("session/prompt: %v; stderr:\n%s", m["error"], stderr.String())
		}
		reached(t, "agentls acp", from)
	})
}
