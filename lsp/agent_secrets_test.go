package lsp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestSecretsReachNoSink: the API key, a GITHUB_TOKEN from the environment
// and the password of the base URL are in the prompt, in a file a command
// prints and in the model's answer. None of them reaches the LSP traffic
// (replies, messages, progress, log messages), the server log, or any file
// under .agentls/ (the session store, command logs, flight recordings,
// reports).
func TestSecretsReachNoSink(t *testing.T) {
	const token = "ghp_TOKENsecret0123456789"
	const password = "url-PASSWORD-98765"
	t.Setenv("GITHUB_TOKEN", token)
	files := map[string]string{"secrets.txt": "key=" + testAPIKey + "\ntoken=" + token + "\npassword=" + password + "\n"}
	for k, v := range goFiles {
		files[k] = v
	}
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"cat secrets.txt"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "exit code"}, Text: "The key is " + testAPIKey + ", the token " + token + " and the password " + password + ".", FinishReason: "stop"},
	}, files, lsptest.Config{WorkDoneProgress: true}, agentOpts{})
	// The base URL of the settings carries the password.
	if err := a.c.Notify(ctx(t), "workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"agentls": map[string]any{
		"baseURL": strings.Replace(a.model.URL(), "http://", "http://agent:"+password+"@", 1)}}}); err != nil {
		t.Fatal(err)
	}
	r, err := a.run(t, map[string]any{"prompt": "print secrets.txt; my key is " + testAPIKey, "mode": "edit"})
	if err != nil || r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	if !strings.Contains(r.Answer, "[redacted]") {
		t.Errorf("answer = %q; want the secrets redacted", r.Answer)
	}
	var fromServer strings.Builder
	for _, line := range strings.Split(a.c.Transcript(), "\n") {
		if strings.Contains(line, " <- ") { // what the server sent; the client's own requests hold the secrets
			fromServer.WriteString(line + "\n")
		}
	}
	if fromServer.Len() == 0 {
		t.Fatal("no server message in the transcript")
	}
	for name, secret := range map[string]string{"API key": testAPIKey, "GITHUB_TOKEN": token, "base URL password": password} {
		if strings.Contains(fromServer.String(), secret) {
			t.Errorf("the %s is in what the server sent", name)
		}
		if strings.Contains(a.logs.String(), secret) {
			t.Errorf("the %s is in the server log", name)
		}
		_ = filepath.WalkDir(filepath.Join(a.root, ".agentls"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
					t.Errorf("the %s is in %s", name, p)
				}
			}
			return nil
		})
	}
}
