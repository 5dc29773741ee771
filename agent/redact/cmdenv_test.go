package redact_test

import (
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/tools"
)

// TestCommandsGetNoVariableThatNamesASecret: tools.CommandEnv (which may
// not import this package) drops every variable SecretName marks, so the
// two definitions never drift apart where it matters.
func TestCommandsGetNoVariableThatNamesASecret(t *testing.T) {
	names := []string{
		"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "DB_PASS", "SMTP_PASS",
		"MYSQL_PWD", "PGPASSWORD", "REDIS_PW", "CI_JOB_JWT", "SLACK_WEBHOOK_URL", "SENTRY_DSN", "GITLAB_PAT",
		"PAT_GITHUB", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_STORAGE_CONNECTION_STRING", "DOCKER_CREDS",
		"NPM_AUTH", "SSH_AUTH_SOCK", "db_pass", "VAULT_OTP", "SIM_PIN", "HOME", "PATH", "PWD", "LANG",
	}
	var env []string
	for i, n := range names {
		env = append(env, n+"=value-of-"+strings.Repeat("x", i)+n)
	}
	kept := map[string]bool{}
	for _, kv := range tools.CommandEnv(env, nil) {
		name, _, _ := strings.Cut(kv, "=")
		kept[name] = true
	}
	for _, n := range names {
		if redact.SecretName(n) && kept[n] {
			t.Errorf("CommandEnv keeps %s, which redact.SecretName marks as a secret", n)
		}
	}
}
