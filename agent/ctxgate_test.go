package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// gateToken and gateKeyBody are the secrets of the workspace in
// TestContextGateHoldsWithoutToolChecks, written in pieces so that no
// scanner takes this file for a leak.
var (
	gateToken   = "tok-" + "9fQ2mZx7Lr4Wv8Ks"
	gateKeyBody = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + "BKcwggSjAgEAAoIBAQDgateTestKey01"
)

// rawRead is a tool with no secret check of its own: it reads the file it
// is given from disk and names it in Files, as a tool whose own check was
// removed (or a new tool that never had one) would.
func rawRead(root string, files bool) *fakeTool {
	return &fakeTool{name: "raw_read", ro: true, run: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
		var a struct{ Path string }
		if err := json.Unmarshal(args, &a); err != nil {
			return tools.Result{}, err
		}
		b, err := os.ReadFile(filepath.Join(root, a.Path))
		if err != nil {
			return tools.Result{IsError: true, Text: err.Error()}, nil
		}
		res := tools.Result{Text: a.Path + ":\n" + string(b)}
		if files {
			res.Files = []string{a.Path}
		}
		return res, nil
	}}
}

// TestContextGateHoldsWithoutToolChecks: the secrets of a .env and of a
// private key reach no model request, whether through a link under an
// ordinary name that a tool without any secret check reads, a tool that
// does not even say what it read, the root AGENTS.md linked to .env, or a
// nested AGENTS.md linked to it: the loop's gate decides, not the tools.
// Every tool call is shown to have run (its result is in a request).
func TestContextGateHoldsWithoutToolChecks(t *testing.T) {
	root := t.TempDir()
	env := "# service settings\nAPI_TOKEN=" + gateToken + "\nLOG_LEVEL=debug\n"
	pem := "-----BEGIN RSA " + "PRIVATE KEY-----\n" + gateKeyBody + "\n-----END RSA " + "PRIVATE KEY-----\n"
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", env)
	write("deploy/notes.txt", "the key:\n"+pem)
	write("pkg/util.go", "package pkg\n")
	link("../.env", "docs/setup.txt")
	link(".env", "AGENTS.md")
	link("../.env", "pkg/AGENTS.md")

	m := &scriptModel{resps: []*llm.Response{
		calls("", call("raw_read", `{"path":"docs/setup.txt"}`)),
		calls("", call("quote", `{"path":"docs/setup.txt"}`)),
		calls("", call("quote", `{"path":"deploy/notes.txt"}`)),
		calls("", call("raw_read", `{"path":"pkg/util.go"}`)),
		answer("done"),
	}}
	quote := rawRead(root, false)
	quote.name = "quote"
	res, _ := runTask(t, Config{Root: root}, m, staticTools(rawRead(root, true), quote), TaskSpec{Kind: KindAsk, Prompt: "what is configured?"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	reqs := m.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests; want 5 (four tool turns and the answer)", len(reqs))
	}
	last, _ := json.Marshal(reqs[len(reqs)-1])
	body := string(last)
	for _, want := range []string{
		"it quotes docs/setup.txt, which is or links to a file that commonly holds secrets", // the linked read, withheld by target
		"API_TOKEN=[redacted]",                // the unnamed quote, hidden by content
		"LOG_LEVEL=debug",                     // what is not secret stays
		"the key:",                            // the key file's ordinary text stays
		"AGENTS.md is or links to a file",     // the root instructions, withheld
		"pkg/AGENTS.md is or links to a file", // the nested ones, withheld
		"package pkg",                         // the last read ran
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the last request lacks %q:\n%s", want, body)
		}
	}
	for i, r := range reqs {
		b, _ := json.Marshal(r)
		for _, secret := range []string{gateToken, gateKeyBody} {
			if strings.Contains(string(b), secret) {
				t.Errorf("request %d holds a secret %q", i+1, secret[:8])
			}
		}
	}
}

// TestContextGateConsentLetsAFileThrough: a result quoting a secret file
// passes the target rule only for the file the user allowed that call to
// read (tools.Approve with Secret records it); its secret values are
// still hidden by content, and another secret file in the same result is
// withheld.
func TestContextGateConsentLetsAFileThrough(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".env"), []byte("DB_PASSWORD="+gateToken+"\nPORT=8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	asked := &fakeTool{name: "asked_read", ro: true, run: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		var a struct{ Path, Also string }
		_ = json.Unmarshal(args, &a)
		if res, err := tools.Approve(ctx, nil, tools.ApprovalRequest{Tool: "asked_read", Path: a.Path, Secret: true}); res != nil || err != nil {
			return *res, err
		}
		b, err := os.ReadFile(filepath.Join(root, a.Path))
		if err != nil {
			return tools.Result{}, err
		}
		res := tools.Result{Text: string(b), Files: []string{a.Path}}
		if a.Also != "" {
			res.Files = append(res.Files, a.Also)
		}
		return res, nil
	}}
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("asked_read", `{"path":".env"}`)),
		calls("", call("asked_read", `{"path":".env","also":"id_rsa"}`)),
		answer("done"),
	}}
	res, _ := runTask(t, Config{Root: root}, m, staticTools(asked), TaskSpec{Kind: KindAsk, Prompt: "p"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	reqs := m.requests()
	second := reqs[1].Messages[len(reqs[1].Messages)-1].Content
	if !strings.Contains(second, "DB_PASSWORD=[redacted]") || !strings.Contains(second, "PORT=8080") {
		t.Errorf("the allowed read: %q; want the file with its secret value hidden", second)
	}
	third := reqs[2].Messages[len(reqs[2].Messages)-1].Content
	if !strings.Contains(third, "withheld") || !strings.Contains(third, "id_rsa") {
		t.Errorf("a result that also quotes a file the user did not allow: %q; want it withheld", third)
	}
	for i, r := range reqs {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), gateToken) {
			t.Errorf("request %d holds the secret", i+1)
		}
	}
}
