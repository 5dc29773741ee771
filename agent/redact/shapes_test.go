package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// Fake secrets of each shape, written in pieces so that no scanner takes
// this file for a leak.
var (
	fakeOpenAI   = "sk-" + "proj-" + "Xq3vT9bL2mN7pR4sK8wY1zA6cD0eF5gH"
	fakeOpenAI2  = "sk-" + "9Tf3kQ2mZ8xLw4Rb7Yp1Nc6Vd0Hs5Ja"
	fakeAnthropc = "sk-" + "ant-api03-" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0"
	fakeGitHub   = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	fakeGitHubFG = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123"
	fakeGitLab   = "glpat-" + "x9Y8z7W6v5U4t3S2r1Q0"
	fakeSlack    = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	fakeHook     = "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
	fakeAWS      = "AKIA" + "IOSFODNN7EXAMPLE"
	fakeGoogle   = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
	fakeJWT      = "eyJ" + "hbGciOiJIUzI1NiJ9.eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	fakePEM      = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\nZ1BjP5CE/Wm/Rr500P\n-----END RSA " + "PRIVATE KEY-----"
)

func TestShapesHideSecretsByValue(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"openai project key", "OPENAI_API_KEY=" + fakeOpenAI, "OPENAI_API_KEY=[redacted]"},
		{"openai key in prose", "use " + fakeOpenAI2 + " for now", "use [redacted] for now"},
		{"anthropic key", "key: " + fakeAnthropc, "key: [redacted]"},
		{"github token in a file", "token = \"" + fakeGitHub + "\"\n", "token = \"[redacted]\"\n"},
		{"github fine-grained token", fakeGitHubFG, "[redacted]"},
		{"gitlab token", "PRIVATE-TOKEN: " + fakeGitLab, "PRIVATE-TOKEN: [redacted]"},
		{"slack bot token", "Authorization: Bearer " + fakeSlack, "Authorization: Bearer [redacted]"},
		{"slack webhook", "curl -X POST " + fakeHook, "curl -X POST https://[redacted]"},
		{"aws access key id", "aws_access_key_id = " + fakeAWS, "aws_access_key_id = [redacted]"},
		{"google api key", "?key=" + fakeGoogle, "?key=[redacted]"},
		{"jwt", "CI_JOB_JWT=" + fakeJWT, "CI_JOB_JWT=[redacted]"},
		{"private key block", "id_rsa:\n" + fakePEM + "\nend", "id_rsa:\n[redacted]\nend"},
		{"private key block cut before its end", "head:\n" + fakePEM[:60] + "... 3 lines cut", "head:\n[redacted]... 3 lines cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New().String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestShapesLeaveOrdinaryTextAlone: code, identifiers and prose that look
// a little like keys are not secrets.
func TestShapesLeaveOrdinaryTextAlone(t *testing.T) {
	for _, in := range []string{
		"import sklearn; task-runner sk-learn",
		"class=\"sk-some-very-long-component-name-here\"",
		"risk-assessment-and-mitigation-framework",
		"ghp_ is the prefix of GitHub's classic tokens",
		"func ghp_helper() {}",
		"AKIA is how AWS access key IDs start",
		"AKIAISNOTAKEY", // too short
		"header := \"eyJhbGciOiJIUzI1NiJ9\" // only the JWT header",
		"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		"See https://api.slack.com/messaging/webhooks for webhooks.",
		"xoxb- tokens are bot tokens",
		"The base64 of it is QUtJQUlPU0ZPRE5ON0VYQU1QTEU=",
		"for i := 0; i < len(sk); i++ { a.sk_list = append(a.sk_list, x) }",
	} {
		if got := New().String(in); got != in {
			t.Errorf("String(%q) = %q; want it unchanged", in, got)
		}
	}
}

// TestJSONHidesShapesAndStaysJSON: a private key in a JSON string (a tool
// result in a recording) is hidden without breaking the document.
func TestJSONHidesShapesAndStaysJSON(t *testing.T) {
	b, _ := json.Marshal(map[string]any{"content": "key:\n" + fakePEM + "\nand " + fakeGitHub, "next": "kept"})
	out := New().JSON(b)
	var m map[string]string
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("JSON(%s) = %s, not JSON: %v", b, out, err)
	}
	if strings.Contains(string(out), "MIIE") || strings.Contains(string(out), fakeGitHub) || m["next"] != "kept" {
		t.Errorf("JSON(...) = %s", out)
	}
	cut, _ := json.Marshal(map[string]any{"content": fakePEM[:60], "next": "kept"})
	out = New().JSON(cut)
	if err := json.Unmarshal(out, &m); err != nil || m["next"] != "kept" || strings.Contains(m["content"], "MIIE") {
		t.Errorf("JSON(%s) = %s (%v)", cut, out, err)
	}
}

func TestSecretNames(t *testing.T) {
	for _, name := range []string{
		"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
		"DB_PASS", "SMTP_PASS", "MYSQL_PWD", "PGPASSWORD", "REDIS_PW", "CI_JOB_JWT",
		"SLACK_WEBHOOK_URL", "SENTRY_DSN", "GITLAB_PAT", "PAT_GITHUB", "GOOGLE_APPLICATION_CREDENTIALS",
		"AZURE_STORAGE_CONNECTION_STRING", "DOCKER_CREDS", "NPM_AUTH", "SSH_AUTH_SOCK", "db_pass",
	} {
		if !SecretName(name) {
			t.Errorf("SecretName(%q) = false; want true", name)
		}
	}
	for _, name := range []string{
		"PWD", "OLDPWD", "PATH", "HOME", "COMPASS_HOME", "BYPASS", "PASSTHROUGH", "GOPATH",
		"LANG", "TERM", "SHELL", "EDITOR", "GOFLAGS", "CI", "PATCH_LEVEL", "SPINNER",
	} {
		if SecretName(name) {
			t.Errorf("SecretName(%q) = true; want false", name)
		}
	}
}

func TestURLHidesUserInfoAndQueryValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://h.example/v1?key=abc123", "https://h.example/v1?key=REDACTED"},
		{"https://u:p@h.example/v1", "https://REDACTED@h.example/v1"},
		{"https://h.example/v1", "https://h.example/v1"},
		{"http://[::1:bad", Text},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
