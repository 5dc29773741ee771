package lsp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/benchstat"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// BenchmarkInlineCompletion: the server's own cost of one inline
// completion (request in to answer out, minus the model's time: from the
// model server receiving the request to its handler returning), and the
// bytes sent to the model per request, for a 600-line Go file open in
// the editor and a FIM model over real HTTP. Each request is at another
// line, so the cache never answers (goal: server cost under 5 ms at p50).
func BenchmarkInlineCompletion(b *testing.B) {
	fm, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "value + 1)\n", Times: -1}}})
	if err != nil {
		b.Fatal(err)
	}
	defer fm.Close()
	var mu sync.Mutex
	var modelTime time.Duration
	var sent int64
	timed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		fm.ServeHTTP(w, r)
		mu.Lock()
		modelTime += time.Since(t0)
		sent += r.ContentLength
		mu.Unlock()
	}))
	defer timed.Close()

	var src strings.Builder
	src.WriteString("package bench\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n")
	const lines = 600
	for i := range lines {
		fmt.Fprintf(&src, "func step%d(value int) int { return compute(value, %d) }\n", i, i)
	}
	text := src.String()
	a := newAgentSession(b, nil, map[string]string{"bench.go": text}, lsptest.Config{}, agentOpts{settings: map[string]any{
		"baseURL":    timed.URL + "/v1",
		"completion": map[string]any{"enabled": true, "model": "fim", "debounceMs": 0},
	}})
	a.open(b, "bench.go")
	uri := lsptest.FileURI(a.path("bench.go"))
	// Warm up: the workspace and the model client exist before the clock.
	var warm server.InlineCompletionList
	if err := a.c.Call(ctx(b), server.MethodTextDocumentInlineCompletion, inlineParams(uri, 8, 20), &warm); err != nil || len(warm.Items) != 1 {
		b.Fatalf("warm-up: %v %+v", err, warm.Items)
	}
	mu.Lock()
	modelTime, sent = 0, 0
	mu.Unlock()

	var own []time.Duration
	b.ResetTimer()
	for i := range b.N {
		line := uint32(9 + i%(lines-2))
		mu.Lock()
		before := modelTime
		mu.Unlock()
		start := time.Now()
		var res server.InlineCompletionList
		if err := a.c.Call(ctx(b), server.MethodTextDocumentInlineCompletion, inlineParams(uri, line, 40), &res); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if len(res.Items) != 1 {
			b.Fatalf("request %d: %d items", i, len(res.Items))
		}
		mu.Lock()
		m := modelTime - before
		mu.Unlock()
		own = append(own, took-m)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(benchstat.Millis(benchstat.Median(own)), "server-ms-p50")
	b.ReportMetric(benchstat.Millis(benchstat.Percentile(own, 90)), "server-ms-p90")
	b.ReportMetric(benchstat.Millis(modelTime)/float64(b.N), "model-ms/op")
	b.ReportMetric(float64(sent)/float64(b.N), "sent-B/op")
}

func inlineParams(uri uri.URI, line, char uint32) *server.InlineCompletionParams {
	return &server.InlineCompletionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: uri},
		Position:     protocol.Position{Line: line, Character: char},
		Context:      server.InlineCompletionContext{TriggerKind: server.InlineCompletionInvoked},
	}
}
