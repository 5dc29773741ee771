package tools

import (
	"regexp"
	"strings"
)

// secretName matches environment variable names that mark a secret. It
// is agent/redact's SecretName (the one definition, which tools may not
// import: it sits above them), written as one regexp; a test of
// agent/redact checks that CommandEnv drops every name SecretName marks.
// PWD and OLDPWD take a secret word but hold none (isSecret).
var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|CREDS|AUTH|COOKIE|SESSION|PRIVATE|WEBHOOK|CONNECTION_?STRING)|(^|_)(PASS|PWD|PW|JWT|DSN|PAT|PIN|OTP)(_|$)`)

// urlUserInfo matches the user information of URLs inside a value
// ("https://user:pass@host", also in lists such as NO_PROXY or PIP_INDEX_URL).
var urlUserInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s]*@`)

// CommandEnv is base as commands get it: without agentls's own secrets and
// settings. It drops the variables named in secretNames (the configured API
// key variable), OPENAI_API_KEY, AZURE_OPENAI_API_KEY, AGENTLS_*, every
// variable whose name marks a secret (secretName: GITHUB_TOKEN,
// AWS_SECRET_ACCESS_KEY, SSH_AUTH_SOCK, DB_PASS, MYSQL_PWD, CI_JOB_JWT,
// SLACK_WEBHOOK_URL, SENTRY_DSN, ...) and any variable whose value is
// the value of a dropped one; it removes the user information of every URL
// in the values that remain (OPENAI_BASE_URL=https://u:p@host becomes
// https://host), and sets a pager that never waits (PAGER=cat,
// GIT_PAGER=cat, GIT_TERMINAL_PROMPT=0).
func CommandEnv(base, secretNames []string) []string {
	drop := map[string]bool{"OPENAI_API_KEY": true, "AZURE_OPENAI_API_KEY": true, "PAGER": true, "GIT_PAGER": true, "GIT_TERMINAL_PROMPT": true}
	for _, s := range secretNames {
		drop[s] = true
	}
	secretValues := map[string]bool{}
	isSecret := func(k string) bool {
		return drop[k] || strings.HasPrefix(k, "AGENTLS_") || (secretName.MatchString(k) && k != "PWD" && k != "OLDPWD")
	}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if isSecret(k) && len(v) >= 8 && k != "PAGER" && k != "GIT_PAGER" {
			secretValues[v] = true
		}
	}
	out := make([]string, 0, len(base)+3)
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || isSecret(k) || secretValues[v] {
			continue
		}
		if strings.Contains(v, "@") {
			v = urlUserInfo.ReplaceAllString(v, "$1")
		}
		out = append(out, k+"="+v)
	}
	return append(out, "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0")
}
