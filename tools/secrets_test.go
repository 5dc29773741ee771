package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/workspace"
)

func TestSecretFile(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".env", true},
		{"app/.env", true},
		{".env.local", true},
		{".env.production", true},
		{"config/prod.env", true},
		{".envrc", true},
		{".env.example", false}, // committed documentation of the variables
		{".env.sample", false},
		{".env.template", false},
		{".env.dist", false},
		{"certs/server.pem", true},
		{"server.key", true},
		{"keys/client.p12", true},
		{"keys/client.pfx", true},
		{"android/release.jks", true},
		{"id_rsa", true},
		{"deploy/id_ed25519", true},
		{"id_ecdsa_sk", true},
		{"id_rsa.pub", false},
		{"id_test.go", false},
		{"src/id_utils.py", false},
		{".netrc", true},
		{".npmrc", true},
		{".pypirc", true},
		{".git-credentials", true},
		{".pgpass", true},
		{"credentials.json", true},
		{"gcp/client_secret_123.apps.googleusercontent.com.json", true},
		{".aws/credentials", true},
		{".docker/config.json", true},
		{".kube/config", true},
		{"home/.ssh/id_work", true},
		{"home/.ssh/authorized_keys", true},
		{"home/.ssh/known_hosts", false},
		{"home/.ssh/id_work.pub", false},
		{".gnupg/secring.gpg", true},
		{"infra/prod.tfvars", true},
		{"README.md", false},
		{"config.json", false},
		{"src/keyboard.go", false},
		{"docs/environment.md", false},
		{"pkg/env.go", false},
		{"CREDENTIALS.JSON", true},
	} {
		if got := SecretFile(tc.path); got != tc.want {
			t.Errorf("SecretFile(%q) = %v; want %v", tc.path, got, tc.want)
		}
	}
}

func TestReadSecretFileAsks(t *testing.T) {
	_, ws := fixture(t, map[string]string{".env": "DB_PASS=hunter2hunter2\n", "certs/a.pem": "-----BEGIN PRIVATE KEY-----\nAAA\n", ".env.example": "DB_PASS=\n", "main.go": "package main\n"})
	for _, tc := range []struct {
		path     string
		decision Decision
		asked    bool
		shown    bool // the content reaches the model
	}{
		{".env", Deny, true, false},
		{".env", AllowOnce, true, true},
		{"certs/a.pem", Deny, true, false},
		{".env.example", Deny, false, true},
		{"main.go", Deny, false, true},
	} {
		ap := &fixedApprover{d: tc.decision}
		r := newReg(t, Env{Workspace: ws, Approver: ap})
		res := call(t, r, "read_file", map[string]any{"path": tc.path})
		if asked := len(ap.reqs) == 1 && ap.reqs[0].Secret && ap.reqs[0].Path == tc.path; asked != tc.asked || len(ap.reqs) > 1 {
			t.Errorf("read_file %s (%v): approval requests %+v; want asked=%v", tc.path, tc.decision, ap.reqs, tc.asked)
		}
		shown := strings.Contains(res.Text, "DB_PASS=") || strings.Contains(res.Text, "PRIVATE KEY") || strings.Contains(res.Text, "package main")
		if shown != tc.shown {
			t.Errorf("read_file %s (%v) = %q; content shown %v, want %v", tc.path, tc.decision, res.Text, shown, tc.shown)
		}
		if !tc.shown && !strings.Contains(res.Text, "the user denied") {
			t.Errorf("read_file %s denied = %q; want the denial explained", tc.path, res.Text)
		}
	}
}

func TestGrepSkipsSecretFiles(t *testing.T) {
	_, ws := fixture(t, map[string]string{".env": "API_TOKEN=s3cr3tvalue99\n", "app/prod.pem": "TOKEN in pem\n", "main.go": "// TOKEN is read from the environment\n"})
	ap := &fixedApprover{d: Deny}
	r := newReg(t, Env{Workspace: ws, Approver: ap})
	for _, args := range []map[string]any{
		{"pattern": "TOKEN"},
		{"pattern": "TOKEN", "path": "."},
		{"pattern": "TOKEN", "glob": "*"},
		{"pattern": "TOKEN", "path": "app"},
	} {
		res := call(t, r, "grep", args)
		if strings.Contains(res.Text, "s3cr3tvalue99") || strings.Contains(res.Text, "TOKEN in pem") {
			t.Errorf("grep %v = %q; a secret file's line reached the model", args, res.Text)
		}
		if !strings.Contains(res.Text, "commonly hold secrets") {
			t.Errorf("grep %v = %q; want the skipped secret files named", args, res.Text)
		}
	}
	if len(ap.reqs) != 0 {
		t.Errorf("grep over folders asked %+v; want no question (secret files are skipped)", ap.reqs)
	}
	res := call(t, r, "grep", map[string]any{"pattern": "TOKEN", "path": ".env"})
	if len(ap.reqs) != 1 || !ap.reqs[0].Secret || strings.Contains(res.Text, "s3cr3tvalue99") {
		t.Errorf("grep path=.env with the user denying = %q, requests %+v; want one secret question and no content", res.Text, ap.reqs)
	}
	allow := newReg(t, Env{Workspace: ws, Approver: &fixedApprover{d: AllowOnce}})
	if res := call(t, allow, "grep", map[string]any{"pattern": "TOKEN", "path": ".env"}); !strings.Contains(res.Text, "s3cr3tvalue99") {
		t.Errorf("grep path=.env allowed = %q; want its line", res.Text)
	}
}

func TestEditSecretFileAsksFirst(t *testing.T) {
	_, ws := fixture(t, map[string]string{".env": "DB_PASS=hunter2hunter2\n"})
	ap := &fixedApprover{d: Deny}
	r := newReg(t, Env{Workspace: ws, Approver: ap})
	// A guess that does not match would quote the closest lines.
	res := call(t, r, "edit_file", map[string]any{"path": ".env", "old_string": "DB_PASS=x", "new_string": "y"})
	if strings.Contains(res.Text, "hunter2") || len(ap.reqs) != 1 || !ap.reqs[0].Secret {
		t.Errorf("edit_file .env denied = %q, requests %+v; want one secret question and no content", res.Text, ap.reqs)
	}
}

// TestLinkToSecretFileAsksLikeTheFile: read_file, grep with the path and
// edit_file on docs/setup.txt -> ../.env ask the secret question, which
// names where the link leads; denied, nothing of the file is shown.
func TestLinkToSecretFileAsksLikeTheFile(t *testing.T) {
	root, ws := fixture(t, map[string]string{".env": "DB_PASS=hunter2hunter2\n", "docs/readme.md": "# docs\n"})
	if err := os.Symlink("../.env", filepath.Join(root, "docs", "setup.txt")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "docs/setup.txt"}},
		{"grep", map[string]any{"pattern": "DB", "path": "docs/setup.txt"}},
		{"edit_file", map[string]any{"path": "docs/setup.txt", "old_string": "DB_PASS=x", "new_string": "y"}},
	} {
		ap := &fixedApprover{d: Deny}
		r := newReg(t, Env{Workspace: ws, Approver: ap})
		res := call(t, r, c.tool, c.args)
		if len(ap.reqs) != 1 || !ap.reqs[0].Secret || !strings.Contains(ap.reqs[0].Summary, "docs/setup.txt (a link to .env)") {
			t.Errorf("%s on the link: requests %+v; want one secret question naming the target", c.tool, ap.reqs)
		}
		if strings.Contains(res.Text, "hunter2") {
			t.Errorf("%s on the link, denied = %q; the file's content was shown", c.tool, res.Text)
		}
	}
	if SecretPath(mustResolve(t, ws, "docs/readme.md")) || !SecretPath(mustResolve(t, ws, "docs/setup.txt")) {
		t.Error("SecretPath decided by name, not by target")
	}
}

func mustResolve(t *testing.T, ws *workspace.Workspace, p string) workspace.Path {
	t.Helper()
	r, err := ws.Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestApproveRecordsSecretConsentForTheCall: an allowed secret request is
// recorded in the call's Consent (what the context gate lets through); a
// denied one is not.
func TestApproveRecordsSecretConsentForTheCall(t *testing.T) {
	for _, d := range []Decision{AllowOnce, Deny} {
		c := Call{ID: "c1", Tool: "read_file", Consent: &Consent{}}
		ctx := WithCall(context.Background(), c)
		_, _ = Approve(ctx, &fixedApprover{d: d}, ApprovalRequest{Tool: "read_file", Path: ".env", Secret: true})
		if got := c.Consent.Allowed(".env"); got != d.Allows() {
			t.Errorf("decision %v: consent for .env = %v", d, got)
		}
		if c.Consent.Allowed("id_rsa") {
			t.Errorf("decision %v: consent for a file never asked about", d)
		}
	}
}
