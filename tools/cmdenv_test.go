package tools

import (
	"slices"
	"strings"
	"testing"
)

func TestCommandEnvKeepsNoSecret(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "GOFLAGS=-mod=mod",
		"OPENAI_API_KEY=sk-openai-1111111111", "AZURE_OPENAI_API_KEY=az-2222222222", "MY_MODEL_VAR=configured-3333333333",
		"GITHUB_TOKEN=ghp_4444444444", "AWS_SECRET_ACCESS_KEY=aws-5555555555", "DB_PASSWORD=pw-6666666666", "FTP_PASSWD=pw-7777777777",
		"GOOGLE_APPLICATION_CREDENTIALS=/k/8888888888.json", "HTTP_AUTHORIZATION=Bearer-9999999999", "NPM_AUTH_TOKEN=npm-1010101010",
		"AGENTLS_MODEL=x", "ANTHROPIC_API_KEY=ant-1212121212", "SSH_AUTH_SOCK=/tmp/ssh-agent.sock",
		"COPY_OF_KEY_UNDER_A_HARMLESS_NAME=sk-openai-1111111111", "GOPRIVATE=sk-openai-1111111111",
		"OPENAI_BASE_URL=https://user:hunter2-1313131313@llm.example.com/v1",
		"HTTPS_PROXY=http://proxyuser:proxypass-1414141414@proxy:3128", "NO_PROXY=localhost,127.0.0.1",
		"NPM_CONFIG__AUTH=npm-1515151515", "CARGO_REGISTRY_TOKEN=cargo-1616161616", "PIP_INDEX_URL=https://u:pip-1717171717@pypi.example/simple",
		"PAGER=less",
	}
	got := CommandEnv(base, []string{"MY_MODEL_VAR"})
	joined := strings.Join(got, "\n")
	for _, secret := range []string{"1111111111", "2222222222", "3333333333", "4444444444", "5555555555", "6666666666", "7777777777",
		"8888888888", "9999999999", "1010101010", "1212121212", "1313131313", "1414141414", "1515151515", "1616161616", "1717171717",
		"hunter2", "proxypass", "AGENTLS_MODEL", "SSH_AUTH_SOCK"} {
		if strings.Contains(joined, secret) {
			t.Errorf("%q reached the command environment:\n%s", secret, joined)
		}
	}
	for _, want := range []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "GOFLAGS=-mod=mod", "OPENAI_BASE_URL=https://llm.example.com/v1",
		"HTTPS_PROXY=http://proxy:3128", "NO_PROXY=localhost,127.0.0.1", "PIP_INDEX_URL=https://pypi.example/simple",
		"PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q missing:\n%s", want, joined)
		}
	}
}

// TestCommandEnvIsAnAllowlist: what builds read passes; the ways into the
// user's session and anything unknown do not.
func TestCommandEnvIsAnAllowlist(t *testing.T) {
	keep := []string{"PATH=/bin", "HOME=/h", "USER=u", "LC_ALL=C", "TERM=xterm", "TZ=UTC", "TMPDIR=/tmp/x",
		"GOPATH=/g", "GO111MODULE=on", "CGO_ENABLED=0", "CC=clang", "CFLAGS=-O2", "CARGO_HOME=/c", "RUSTUP_HOME=/r",
		"PYTHONPATH=/p", "VIRTUAL_ENV=/v", "JAVA_HOME=/j", "NODE_OPTIONS=--max-old-space-size=4096", "NPM_CONFIG_REGISTRY=https://r.example"}
	drop := []string{"TMUX=/tmp/tmux-0/default,1,0", "TMUX_PANE=%1", "SSH_AUTH_SOCK=/run/user/1/ssh", "SSH_AGENT_PID=4",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1/bus", "DOCKER_HOST=unix:///run/docker.sock", "XDG_RUNTIME_DIR=/run/user/1",
		"DISPLAY=:0", "WAYLAND_DISPLAY=wayland-0", "GPG_AGENT_INFO=/run/user/1/gnupg/S.gpg-agent", "KUBECONFIG=/h/.kube/config",
		"GIT_CONFIG_PARAMETERS='core.fsmonitor'='x'", "GIT_DIR=/elsewhere", "LD_PRELOAD=/x.so", "GOOGLE_CLOUD_PROJECT=p",
		"HARMLESS=visible", "DB_PASS=pw", "MYSQL_PWD=pw", "CI_JOB_JWT=j", "SLACK_WEBHOOK_URL=https://hooks.example/x", "SMTP_PASS=pw"}
	got := CommandEnv(append(slices.Clone(keep), drop...), nil)
	for _, kv := range keep {
		if !slices.Contains(got, kv) {
			t.Errorf("%s was dropped: builds need it", kv)
		}
	}
	for _, kv := range drop {
		k, _, _ := strings.Cut(kv, "=")
		for _, g := range got {
			if strings.HasPrefix(g, k+"=") {
				t.Errorf("%s reached the command environment", k)
			}
		}
	}
}

// TestUserEnvKeepsTheUsersOwnDropsAgentlsSecrets: the user's own programs
// get the user's environment (their session, their tokens) but never the
// API key, agentls's variables or a copy of them.
func TestUserEnvKeepsTheUsersOwnDropsAgentlsSecrets(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/home/u", "SSH_AUTH_SOCK=/tmp/ssh-agent.sock", "GITHUB_TOKEN=ghp_4444444444",
		"MY_EDITOR_THING=x", "OPENAI_API_KEY=sk-openai-1111111111", "AZURE_OPENAI_API_KEY=az-2222222222",
		"MY_MODEL_VAR=configured-3333333333", "AGENTLS_MODEL=gpt-x", "AGENTLS_RUN_ID=abc",
		"COPY_OF_KEY=sk-openai-1111111111", "ALSO_A_COPY=configured-3333333333",
		"OPENAI_BASE_URL=https://user:hunter2-1313131313@llm.example.com/v1",
	}
	got := UserEnv(base, []string{"MY_MODEL_VAR"})
	joined := strings.Join(got, "\n")
	for _, secret := range []string{"1111111111", "2222222222", "3333333333", "AGENTLS_", "hunter2"} {
		if strings.Contains(joined, secret) {
			t.Errorf("%q reached the user program's environment:\n%s", secret, joined)
		}
	}
	for _, want := range []string{"PATH=/usr/bin", "HOME=/home/u", "SSH_AUTH_SOCK=/tmp/ssh-agent.sock", "GITHUB_TOKEN=ghp_4444444444",
		"MY_EDITOR_THING=x", "OPENAI_BASE_URL=https://llm.example.com/v1"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q missing:\n%s", want, joined)
		}
	}
}
