package main

import (
	"fmt"
	"io"
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

// TestEditorGoneMidTask: the editor goes away (stdin and stdout both
// closed, as when it crashes) while a task waits on the model. The server
// must not die of SIGPIPE on its next progress write: it cancels the task,
// drains it (the task's report is written) and exits with code 1 (no
// shutdown came), well within the drain bound.
func TestEditorGoneMidTask(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())
	model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Delay: fakemodel.Duration(20 * time.Second), Text: "never sent", FinishReason: "stop"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(serveEnv(t), "OPENAI_API_KEY=sk-x", "OPENAI_BASE_URL="+model.URL(), "AGENTLS_MODEL=test-model")
	p := lsptest.StartProcess(t, bin, []string{"serve", "--log-level", "debug"}, env, lsptest.Config{
		WorkDoneProgress: true, ApplyEdit: true, Roots: []string{root},
		InitializationOptions: map[string]any{"validate": "off"},
	})
	if _, err := p.Initialize(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _, _ = p.ExecuteCommand(ctxT(t), lsp.CommandRun, map[string]any{"prompt": "what is main?", "mode": "ask"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(model.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(model.Requests()) == 0 {
		t.Fatal("the model call never came")
	}
	start := time.Now()
	if err := p.Disconnect(); err != nil { // the editor is gone: both pipes closed
		t.Fatal(err)
	}
	code, err := p.Wait(5 * time.Second)
	if err != nil {
		t.Fatalf("%v after the editor went away", err)
	}
	t.Logf("exited with %d, %v after the editor went away", code, time.Since(start))
	if code != 1 {
		t.Errorf("exit code %d; want 1 (no shutdown; not killed by SIGPIPE)\nstderr:\n%s", code, p.Stderr())
	}
	reports, _ := filepath.Glob(filepath.Join(root, ".agentls", "tasks", "*.md"))
	if len(reports) != 1 {
		t.Errorf("task reports %v; want the cancelled task's report written during the drain", reports)
	} else if b, _ := os.ReadFile(reports[0]); !strings.Contains(string(b), "cancel") {
		t.Errorf("report does not say cancelled:\n%s", b)
	}
}

// TestServeSurvivesClosedStderr: an editor that closes the server's stderr
// (or stops draining it and closes it) must not kill the server on its next
// warning: a write to a broken stderr pipe would raise SIGPIPE, which ends a
// Go program unless serve ignores it. The invalid setting below logs a
// warning to stderr; the session goes on and ends with code 0.
func TestServeSurvivesClosedStderr(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())
	cmd := exec.Command(bin, "serve", "--log-file", "-")
	cmd.Env = serveEnv(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	_ = stderr.Close() // the editor is not listening to stderr any more
	waited := make(chan error, 1)
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		waited <- cmd.Wait()
	}()
	frame := func(s string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(s), s) }
	msgs := frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"initializationOptions":{"maxTurns":"many"}}}`) +
		frame(`{"jsonrpc":"2.0","method":"initialized","params":{}}`) +
		frame(`{"jsonrpc":"2.0","method":"workspace/didChangeConfiguration","params":{"settings":{"agentls":{"approval":"sometimes"}}}}`) +
		frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`) +
		frame(`{"jsonrpc":"2.0","method":"exit"}`)
	if _, err := io.WriteString(stdin, msgs); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("process ended with %v; want exit code 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit")
	}
}
