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
		"COPY_OF_KEY_UNDER_A_HARMLESS_NAME=sk-openai-1111111111",
		"OPENAI_BASE_URL=https://user:hunter2-1313131313@llm.example.com/v1",
		"HTTPS_PROXY=http://proxyuser:proxypass-1414141414@proxy:3128", "NO_PROXY=localhost,127.0.0.1",
		"PAGER=less",
	}
	got := CommandEnv(base, []string{"MY_MODEL_VAR"})
	joined := strings.Join(got, "\n")
	for _, secret := range []string{"1111111111", "2222222222", "3333333333", "4444444444", "5555555555", "6666666666", "7777777777",
		"8888888888", "9999999999", "1010101010", "1212121212", "1313131313", "1414141414", "hunter2", "proxypass", "AGENTLS_MODEL", "SSH_AUTH_SOCK"} {
		if strings.Contains(joined, secret) {
			t.Errorf("%q reached the command environment:\n%s", secret, joined)
		}
	}
	for _, want := range []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "GOFLAGS=-mod=mod", "OPENAI_BASE_URL=https://llm.example.com/v1",
		"HTTPS_PROXY=http://proxy:3128", "NO_PROXY=localhost,127.0.0.1", "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q missing:\n%s", want, joined)
		}
	}
}
