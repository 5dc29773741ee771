package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/benchstat"
	"github.com/agentls/agentls/internal/procmem"
	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/tools/mcp/mcptest"
)

// Bounds of the served process while an outside program floods it.
const (
	serveMaxRSS = 200 << 20
	// editorLatency is how fast the editor's requests must be answered
	// while a flood is read; on a loaded machine the bound is that or 3
	// times the same requests' latency before the task, whichever is more.
	editorLatency = 50 * time.Millisecond
)

// floodls builds langserver/testdata/floodls outside /tmp (the sandbox
// gives each program a private /tmp).
func floodls(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(cache, 0o755)
	dir, err := os.MkdirTemp(cache, "agentls-floodls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "floodls")
	if out, err := exec.Command("go", "build", "-o", bin, "../../langserver/testdata/floodls").CombinedOutput(); err != nil {
		t.Fatalf("building floodls: %v\n%s", err, out)
	}
	return bin
}

// latencies times codeAction requests on file, back to back, until stop
// is closed (at least min of them).
func latencies(t *testing.T, p *lsptest.Process, file string, stop <-chan struct{}, min int) []time.Duration {
	t.Helper()
	params := map[string]any{
		"textDocument": map[string]any{"uri": uri.File(file)},
		"range":        map[string]any{"start": map[string]int{"line": 2, "character": 0}, "end": map[string]int{"line": 2, "character": 4}},
		"context":      map[string]any{"diagnostics": []any{}},
	}
	var out []time.Duration
	for {
		select {
		case <-stop:
			if len(out) >= min {
				return out
			}
		default:
		}
		start := time.Now()
		var res json.RawMessage
		if err := p.Call(ctxT(t), "textDocument/codeAction", params, &res); err != nil {
			t.Fatalf("codeAction: %v", err)
		}
		out = append(out, time.Since(start))
	}
}

// TestServeBoundsOutsidePrograms drives a real `agentls serve` process
// whose task calls a tool of an outside program that floods it with one
// answer at 10 times its limit (agentls's own language server, the
// editor's forwarded one, a stdio and an HTTP MCP server) or with more
// items than are kept (4,000 MCP tools). Each time the answer is bounded
// (the tool result says so; the model's requests stay small), the
// process's peak RSS (VmHWM) stays under 200 MB, and the editor's
// codeAction requests sent back to back meanwhile are answered within
// 50 ms at the 95th percentile (or 3 times the idle figure on a loaded
// machine).
func TestServeBoundsOutsidePrograms(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())
	fl := floodls(t)
	mcpBin := lsptest.MCPTestServer(t)
	// The editor's forwarded answer: 10 times the limit, far over the
	// editor connection's own frame limit too.
	var fwd []byte
	fwdOnce := sync.OnceValue(func() []byte {
		item := `{"uri":"file:///w/main.go","range":{"start":{"line":2,"character":5},"end":{"line":2,"character":9}}}`
		n := 10*langserver.MaxMessage/(len(item)+1) + 1
		return []byte("[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]")
	})
	httpFlood := &mcptest.Flood{Bytes: 10 * mcp.MaxMessageBytes}
	hs := httptest.NewServer(httpFlood)
	defer hs.Close()
	for _, tc := range []struct {
		name     string
		settings map[string]any
		editor   func(method string, params json.RawMessage) (json.RawMessage, error)
		call     fakemodel.ToolCall
		want     string // in the tool result the model reads
		// orWant, when set, may stand for want: another bound that can
		// fire first on a loaded machine.
		orWant string
	}{
		{name: "own language server: references at 10x",
			settings: map[string]any{"languageServers": map[string]any{"go": map[string]any{"command": fl, "args": []string{"-refbytes", fmt.Sprint(10 * langserver.MaxMessage)}}}},
			call:     fakemodel.ToolCall{ID: "c1", Name: "references", Arguments: `{"file":"main.go","symbol":"Total"}`},
			want:     fmt.Sprintf("exceeds the limit of %d bytes", langserver.MaxMessage)},
		{name: "own language server: hover at 10x",
			settings: map[string]any{"languageServers": map[string]any{"go": map[string]any{"command": fl, "args": []string{"-hover", fmt.Sprint(10 * langserver.MaxMessage)}}}},
			call:     fakemodel.ToolCall{ID: "c1", Name: "hover", Arguments: `{"file":"main.go","symbol":"Total"}`},
			want:     "exceeds the limit"},
		{name: "editor's language server: references at 10x",
			editor: func(method string, _ json.RawMessage) (json.RawMessage, error) {
				if method != "textDocument/references" {
					return json.RawMessage("null"), nil
				}
				fwd = fwdOnce()
				return fwd, nil
			},
			// No server of agentls's own to fall back on: the result says why
			// the editor's answer was not used.
			settings: map[string]any{"languageServers": map[string]any{"go": map[string]any{"command": "no-such-language-server"}}},
			call:     fakemodel.ToolCall{ID: "c1", Name: "references", Arguments: `{"file":"main.go","symbol":"Total","line":3}`},
			want:     "exceeds the limit",
			// The fake editor (this test process) may take longer than the
			// forward timeout to write 80 MB on a loaded machine: then the
			// time bound fires first, the editor is not asked again and
			// agentls's own (missing) server answers.
			orWant: "no-such-language-server: start: not installed"},
		{name: "stdio MCP server: a message at 10x",
			settings: map[string]any{"mcpServers": map[string]any{"test": map[string]any{"command": mcpBin}}},
			call:     fakemodel.ToolCall{ID: "c1", Name: "mcp__test__flood", Arguments: fakemodel.Args(fmt.Sprintf(`{"bytes":%d}`, 10*mcp.MaxMessageBytes))},
			want:     fmt.Sprintf("over the limit of %d bytes", mcp.MaxMessageBytes)},
		{name: "stdio MCP server: 4,000 tools",
			settings: map[string]any{"mcpServers": map[string]any{"many": map[string]any{"command": mcpBin, "args": []string{"-tools", "4000", "-schema", "1000"}}}},
			call:     fakemodel.ToolCall{ID: "c1", Name: "mcp__many__t00099", Arguments: `{}`},
			want:     "ok"},
		{name: "HTTP MCP server: a body at 10x",
			settings: map[string]any{"mcpServers": map[string]any{"remote": map[string]any{"type": "http", "url": hs.URL}}},
			call:     fakemodel.ToolCall{ID: "c1", Name: "mcp__remote__flood", Arguments: `{}`},
			want:     fmt.Sprintf("over the limit of %d bytes", mcp.MaxMessageBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{tc.call}},
				{Text: "Done.", FinishReason: "stop", Times: -1},
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			root := t.TempDir()
			src := "package main\n\nfunc Total(xs []int) int { return len(xs) }\n\nfunc main() { println(Total(nil)) }\n"
			for name, text := range map[string]string{"go.mod": "module w\n\ngo 1.22\n", "main.go": src} {
				if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			settings := map[string]any{"validate": "off", "approval": "auto"}
			for k, v := range tc.settings {
				settings[k] = v
			}
			// The user's own settings file: servers and approval from the
			// client would be asked about first.
			env := append(userSettingsEnv(t, settings), "OPENAI_API_KEY=sk-bounds-SECRET", "OPENAI_BASE_URL="+model.URL(), "AGENTLS_MODEL=test-model")
			p := lsptest.StartProcess(t, bin, []string{"serve"}, env, lsptest.Config{
				WorkDoneProgress: true, ApplyEdit: true, Roots: []string{root}, SaveDocuments: tc.editor != nil, LSP: tc.editor,
			})
			if _, err := p.Initialize(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(root, "main.go")
			if err := p.OpenDocument(ctxT(t), file, "go", src); err != nil {
				t.Fatal(err)
			}
			idle := latencies(t, p, file, closed(), 50)
			done := make(chan struct{})
			var reply lsp.RunReply
			var runErr error
			go func() {
				defer close(done)
				raw, _, err := p.ExecuteCommand(context.Background(), lsp.CommandRun, map[string]any{"prompt": "use the tool", "mode": "edit"})
				if runErr = err; err == nil {
					runErr = json.Unmarshal(raw, &reply)
				}
			}()
			busy := latencies(t, p, file, done, 20)
			if runErr != nil || reply.Status != "completed" {
				t.Fatalf("the task: %+v, %v", reply, runErr)
			}
			peak := procmem.Peak(t, p.Cmd.Process.Pid)
			reqs := model.Requests()
			if len(reqs) < 2 {
				t.Fatalf("%d model requests; want the tool's result sent", len(reqs))
			}
			last := string(reqs[1].Body)
			if !strings.Contains(last, tc.want) && (tc.orWant == "" || !strings.Contains(last, tc.orWant)) {
				i := max(0, strings.LastIndex(last, "tool_call_id")-3000)
				t.Errorf("the model's request after the tool lacks %q:\n%s", tc.want, last[i:])
			}
			biggest := 0
			for _, r := range reqs {
				biggest = max(biggest, len(r.Body))
			}
			if biggest > 1<<20 {
				t.Errorf("a model request of %d bytes; want the outside program's answer cut", biggest)
			}
			if peak > serveMaxRSS {
				t.Errorf("agentls's peak RSS %d MB; want under %d MB", peak>>20, serveMaxRSS>>20)
			}
			bound := max(editorLatency, 3*benchstat.Percentile(idle, 95))
			if p95 := benchstat.Percentile(busy, 95); p95 > bound {
				t.Errorf("codeAction p95 %s during the flood (idle p95 %s); want at most %s", p95, benchstat.Percentile(idle, 95), bound)
			}
			t.Logf("%s: agentls peak RSS %d MB; codeAction idle p50 %s p95 %s; during the task (%d requests) p50 %s p95 %s max %s; largest model request %d bytes",
				tc.name, peak>>20, benchstat.Median(idle), benchstat.Percentile(idle, 95), len(busy), benchstat.Median(busy), benchstat.Percentile(busy, 95), benchstat.Percentile(busy, 100), biggest)
		})
	}
}

func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
