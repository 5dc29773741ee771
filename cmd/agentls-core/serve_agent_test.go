package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestServeAgentOverStdio drives the built binary over real stdio against
// the scripted model server: agentls.run edits an open file through
// workspace/applyEdit, reports progress, writes its report and replies;
// shutdown and exit end the process with code 0.
func TestServeAgentOverStdio(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())
	model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"main.go"}`}}},
		{Match: &fakemodel.Match{LastToolResult: "package main"}, ToolCalls: []fakemodel.ToolCall{{ID: "c2", Name: "edit_file", Arguments: `{"path":"main.go","old_string":"hello","new_string":"hi"}`}}},
		{Match: &fakemodel.Match{LastToolResult: "edited main.go"}, Text: "main now prints hi.", FinishReason: "stop"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	root := t.TempDir()
	src := "package main\n\nfunc main() { println(\"hello\") }\n"
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(serveEnv(t), "OPENAI_API_KEY=sk-stdio-SECRET", "OPENAI_BASE_URL="+model.URL(), "AGENTLS_MODEL=test-model")
	p := lsptest.StartProcess(t, bin, []string{"serve", "--log-level", "debug"}, env, lsptest.Config{
		WorkDoneProgress: true, ApplyEdit: true, Roots: []string{root},
		InitializationOptions: map[string]any{"validate": "off", "approval": "auto"},
	})
	if _, err := p.Initialize(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "main.go")
	if err := p.OpenDocument(ctxT(t), file, "go", src); err != nil {
		t.Fatal(err)
	}
	raw, _, err := p.ExecuteCommand(ctxT(t), lsp.CommandRun, map[string]any{"prompt": "make main print hi", "uri": string(uri.File(file))})
	if err != nil {
		t.Fatal(err)
	}
	var r lsp.RunReply
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "completed" || strings.Join(r.ChangedFiles, ",") != "main.go" || r.LLMCalls != 3 {
		t.Errorf("reply = %s", raw)
	}
	if text, _, _ := p.Document(file); !strings.Contains(text, "hi") {
		t.Errorf("buffer = %q", text)
	}
	st := p.Snapshot()
	if len(st.ProgressOrder) != 1 || !st.Progress[st.ProgressOrder[0]].Ended() || !st.HasShowMessage(r.Summary) {
		t.Errorf("progress %v, messages %+v", st.ProgressOrder, st.ShowMessages)
	}
	if b, err := os.ReadFile(uri.URI(r.Report).FsPath()); err != nil || !strings.Contains(string(b), "main now prints hi") {
		t.Errorf("report: %v", err)
	}
	if err := p.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_ = p.Exit(ctxT(t))
	if code, err := p.Wait(10 * time.Second); err != nil || code != 0 {
		t.Errorf("exit code %d, %v", code, err)
	}
	if strings.Contains(p.Stderr(), "sk-stdio-SECRET") || strings.Contains(p.Transcript(), "sk-stdio-SECRET") {
		t.Errorf("the API key leaked")
	}
}
