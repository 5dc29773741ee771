package ctxgate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/tools"
)

// secret is a value of the tests, in pieces so no scanner takes it for a
// leak.
var secret = "s3cr" + "et-Vq8Lm2Xw9Kp4"

func TestAssignmentsHidesDotenvSecretsOnly(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// hidden: dotenv lines whose name marks a secret, however quoted
		// and whatever a tool put before the line
		{"API_TOKEN=" + secret, "API_TOKEN=[redacted]"},
		{"export DB_PASSWORD=" + secret, "export DB_PASSWORD=[redacted]"},
		{`STRIPE_SECRET_KEY="` + secret + `"`, "STRIPE_SECRET_KEY=[redacted]"},
		{"SMTP_PASS='" + secret + "'", "SMTP_PASS=[redacted]"},
		{"docs/setup.txt:3: GITHUB_TOKEN=" + secret, "docs/setup.txt:3: GITHUB_TOKEN=[redacted]"},
		{"    12\tAWS_SECRET_ACCESS_KEY=" + secret, "    12\tAWS_SECRET_ACCESS_KEY=[redacted]"},
		{"  3: SESSION_COOKIE_KEY=" + secret + " # prod", "  3: SESSION_COOKIE_KEY=[redacted] # prod"},
		{"a\nAPI_KEY=" + secret + "\nPORT=8080\n", "a\nAPI_KEY=[redacted]\nPORT=8080\n"},
		// kept: names that mark no secret, references, placeholders,
		// numbers, booleans, code
		{"LOG_LEVEL=debug", "LOG_LEVEL=debug"},
		{"DATABASE_HOST=localhost", "DATABASE_HOST=localhost"},
		{"API_TOKEN=$API_TOKEN", "API_TOKEN=$API_TOKEN"},
		{"GITHUB_TOKEN=$(gh auth token)", "GITHUB_TOKEN=$(gh auth token)"},
		{"API_KEY=${KEY}", "API_KEY=${KEY}"},
		{"API_KEY=<your-api-key>", "API_KEY=<your-api-key>"},
		{"API_KEY=your-api-key-here", "API_KEY=your-api-key-here"},
		{"DB_PASSWORD=changeme", "DB_PASSWORD=changeme"},
		{"API_KEY=xxxxxxxxxxxx", "API_KEY=xxxxxxxxxxxx"},
		{"SESSION_TIMEOUT=3600", "SESSION_TIMEOUT=3600"},
		{"AUTH_ENABLED=true", "AUTH_ENABLED=true"},
		{"API_KEY=", "API_KEY="},
		{`token = load("token")`, `token = load("token")`},
		{"f(token=t, password=pw)", "f(token=t, password=pw)"},
		{"api_key=" + secret, "api_key=" + secret},     // lower case: code, not dotenv
		{"API_KEY = " + secret, "API_KEY = " + secret}, // spaces: Makefile or code
		{"x := cfg.API_KEY==" + secret, "x := cfg.API_KEY==" + secret},
	} {
		if got := Assignments(tc.in); got != tc.want {
			t.Errorf("Assignments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestGateDecidesFilesByTarget(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".env"), []byte("K=v\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"docs/setup.txt": "../.env", "AGENTS.md": ".env", ".claude/commands/setup.md": "../../.env", "README.md": ""} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target == "" {
			if err := os.WriteFile(p, []byte("# readme\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	g := New(root, redact.New(secret))
	for name, want := range map[string]bool{"docs/setup.txt": true, "AGENTS.md": true, ".claude/commands/setup.md": true, ".env": true, "README.md": false, "id_rsa": true, "main.go": false} {
		if got := g.Secret(name); got != want {
			t.Errorf("Secret(%q) = %v, want %v", name, got, want)
		}
	}
	if _, ok := g.File("AGENTS.md", "API_KEY=x"); ok {
		t.Error("File let AGENTS.md -> .env through")
	}
	if text, ok := g.File("README.md", "use "+secret); !ok || strings.Contains(text, secret) {
		t.Errorf("File(README.md) = %q, %v; want its text with the configured secret hidden", text, ok)
	}

	res, hid := g.Result(tools.Result{Text: "K=v", Evidence: "K=v", Files: []string{"README.md", "docs/setup.txt"}}, nil)
	if !hid || !res.IsError || !strings.Contains(res.Text, "docs/setup.txt") || strings.Contains(res.Text, "K=v") || res.Evidence != "" {
		t.Errorf("a result quoting a link to .env: %+v", res)
	}
	consent := &tools.Consent{}
	consent.Allow("docs/setup.txt")
	res, _ = g.Result(tools.Result{Text: "K=v\nAPI_TOKEN=" + secret, Files: []string{"docs/setup.txt"}}, consent)
	if res.IsError || res.Text != "K=v\nAPI_TOKEN=[redacted]" {
		t.Errorf("an allowed read: %+v; want its text with the secret value hidden", res)
	}

	req := g.Request(llm.Request{
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "key " + secret}, {Role: llm.RoleTool, Content: "-----BEGIN EC " + "PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC " + "PRIVATE KEY-----"}},
		Tools:    []llm.ToolDef{{Name: "mcp__x__y", Description: "uses " + secret}},
	})
	for _, m := range req.Messages {
		if strings.Contains(m.Content, secret) || strings.Contains(m.Content, "MHcCAQEEIB") {
			t.Errorf("Request left a secret in %q", m.Content)
		}
	}
	if strings.Contains(req.Tools[0].Description, secret) {
		t.Errorf("Request left a secret in a tool description: %q", req.Tools[0].Description)
	}
}
