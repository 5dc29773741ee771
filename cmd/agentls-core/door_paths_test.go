package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// The two paths of the benchmark at the door that are not searches: an
// inline completion and an MCP tool call, each through `agentls serve`
// over stdio, each set against what agentls cannot make faster (the
// model's own time; the MCP server's own round trip).

// doorCompletion asks for n inline completions at other lines of a
// 600-line file open in the editor (so the cache never answers) through a
// served process with a FIM model over real HTTP, one at a time, and
// returns each round trip over the pipe and the model's time within it
// (from the model server receiving the request to its handler returning).
func doorCompletion(b *testing.B, bin string, n int) (total, model []time.Duration) {
	fm, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "value + 1)\n", Times: -1}}})
	if err != nil {
		b.Fatal(err)
	}
	defer fm.Close()
	var mu sync.Mutex
	var inModel time.Duration
	timed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		fm.ServeHTTP(w, r)
		mu.Lock()
		inModel += time.Since(t0)
		mu.Unlock()
	}))
	defer timed.Close()

	dir := b.TempDir()
	var src strings.Builder
	src.WriteString("package bench\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n")
	const lines = 600
	for i := range lines {
		fmt.Fprintf(&src, "func step%d(value int) int { return compute(value, %d) }\n", i, i)
	}
	file := filepath.Join(dir, "bench.go")
	if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	env := append(serveEnv(b), "OPENAI_API_KEY=sk-door-bench", "OPENAI_BASE_URL="+timed.URL+"/v1", "AGENTLS_MODEL=test-model")
	p := lsptest.StartProcess(b, bin, []string{"serve", "--log-file", "-"}, env, lsptest.Config{
		Roots: []string{dir},
		InitializationOptions: map[string]any{
			"validate":   "off",
			"completion": map[string]any{"enabled": true, "model": "fim", "debounceMs": 0},
		},
	})
	if _, err := p.Initialize(ctxT(b)); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = p.Shutdown(ctxT(b))
		_ = p.Exit(ctxT(b))
		_, _ = p.Wait(30 * time.Second)
	}()
	if err := p.OpenDocument(ctxT(b), file, "go", src.String()); err != nil {
		b.Fatal(err)
	}
	ask := func(line uint32) time.Duration {
		mu.Lock()
		before := inModel
		mu.Unlock()
		params := &server.InlineCompletionParams{
			TextDocument: protocol.TextDocumentIdentifier{URI: lsptest.FileURI(file)},
			Position:     protocol.Position{Line: line, Character: 40},
			Context:      server.InlineCompletionContext{TriggerKind: server.InlineCompletionInvoked},
		}
		t0 := time.Now()
		var res server.InlineCompletionList
		if err := p.Call(ctxT(b), server.MethodTextDocumentInlineCompletion, params, &res); err != nil {
			b.Fatalf("inlineCompletion: %v", err)
		}
		took := time.Since(t0)
		if len(res.Items) != 1 {
			b.Fatalf("inlineCompletion at line %d: %d items", line, len(res.Items))
		}
		mu.Lock()
		model = append(model, inModel-before)
		mu.Unlock()
		return took
	}
	ask(8) // the workspace and the model client exist before the clock
	model = model[:0]
	for i := range n {
		total = append(total, ask(uint32(9+i%(lines-2))))
	}
	return total, model
}

// doorMCP runs a task through a served process that calls the MCP tool
// echo of the user's MCP server n times (the user settings file names the
// server; approval "auto" there, so nothing asks), and returns the time
// from each model request that asked for the call to the next model
// request; then it times n calls of the same tool made directly with the
// MCP Go SDK to another process of the same server.
func doorMCP(b *testing.B, bin string, n int) (through, direct []time.Duration) {
	mcpBin := lsptest.MCPTestServer(b)
	var turns []fakemodel.Turn
	for i := range n {
		turns = append(turns, fakemodel.Turn{
			Match:     &fakemodel.Match{AnyMessage: "MCP:"},
			ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("mcp-%d", i), Name: "mcp__bench__echo", Arguments: fakemodel.Args(fmt.Sprintf(`{"text":"call %d"}`, i))}},
		})
	}
	turns = append(turns, fakemodel.Turn{Match: &fakemodel.Match{AnyMessage: "MCP:"}, Text: "MCP: done.", FinishReason: "stop"})
	m, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	cfg := b.TempDir()
	settings, _ := json.Marshal(map[string]any{
		"approval":   "auto",
		"mcpServers": map[string]any{"bench": map[string]any{"command": mcpBin}},
	})
	if err := os.MkdirAll(filepath.Join(cfg, "agentls"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "agentls", "settings.json"), settings, 0o600); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	env := append(serveEnv(b), "XDG_CONFIG_HOME="+cfg, "OPENAI_API_KEY=sk-door-bench", "OPENAI_BASE_URL="+m.URL(), "AGENTLS_MODEL=test-model")
	p := lsptest.StartProcess(b, bin, []string{"serve", "--log-file", "-"}, env, lsptest.Config{
		WorkDoneProgress: true, Roots: []string{dir},
		InitializationOptions: map[string]any{"validate": "off", "maxTurns": n + 5},
	})
	if _, err := p.Initialize(ctxT(b)); err != nil {
		b.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	raw, _, err := p.ExecuteCommand(rctx, lsp.CommandRun, map[string]any{"prompt": "MCP: call echo", "mode": "edit"})
	var r lsp.RunReply
	if err == nil {
		err = json.Unmarshal(raw, &r)
	}
	if err != nil || r.Status != "completed" {
		b.Fatalf("MCP task: %s, %v", raw, err)
	}
	reqs := m.Requests()
	if len(reqs) != n+1 {
		b.Fatalf("MCP task: %d model requests, want %d", len(reqs), n+1)
	}
	for i := 1; i < len(reqs); i++ {
		if !strings.Contains(lastToolResult(reqs[i]), "echo: call") {
			b.Fatalf("model request %d carries no echo result: %q", i, lastToolResult(reqs[i]))
		}
		through = append(through, reqs[i].Time.Sub(reqs[i-1].Time))
	}
	_ = p.Shutdown(ctxT(b))
	_ = p.Exit(ctxT(b))
	_, _ = p.Wait(30 * time.Second)

	client := mcp.NewClient(&mcp.Implementation{Name: "door-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctxT(b), &mcp.CommandTransport{Command: exec.Command(mcpBin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for i := range n {
		t0 := time.Now()
		res, err := cs.CallTool(ctxT(b), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprintf("call %d", i)}})
		if err != nil || res.IsError {
			b.Fatalf("direct echo: %v %+v", err, res)
		}
		direct = append(direct, time.Since(t0))
	}
	return through, direct
}

// lastToolResult is the content of the last tool message of req.
func lastToolResult(req fakemodel.RecordedRequest) string {
	msgs := req.Chat.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" {
			return msgs[i].Content
		}
	}
	return ""
}

// pathLines are the table's lines for the completion and MCP paths.
func pathLines(completion, model, through, direct []time.Duration, load [2]float64) string {
	own := make([]time.Duration, len(completion))
	for i := range completion {
		own[i] = completion[i] - model[i]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| inline completion through `agentls serve` (FIM model over HTTP) | %d requests | p50 %.2f, p99 %.2f; agentls's own p50 %.2f, p99 %.2f | the model's time | p50 %.2f | %.2fx | | %.2f |\n",
		len(completion), ms(pct(completion, 50)), ms(pct(completion, 99)), ms(pct(own, 50)), ms(pct(own, 99)), ms(pct(model, 50)),
		ms(pct(completion, 50))/ms(pct(model, 50)), load[0])
	fmt.Fprintf(&b, "| MCP tool call in a task, model request to next model request | %d calls | p50 %.2f, p99 %.2f (%.2f ms more than direct at p50) | the same call by the MCP Go SDK, direct | p50 %.2f, p99 %.2f | %.2fx | | %.2f |\n",
		len(through), ms(pct(through, 50)), ms(pct(through, 99)), ms(pct(through, 50))-ms(pct(direct, 50)), ms(pct(direct, 50)), ms(pct(direct, 99)),
		ms(pct(through, 50))/ms(pct(direct, 50)), load[1])
	return b.String()
}
