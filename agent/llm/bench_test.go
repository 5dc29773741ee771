package llm_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/benchstat"
)

// median is the median of ds in µs.
func median(ds []time.Duration) float64 {
	return float64(benchstat.Median(ds).Nanoseconds()) / 1e3
}

// BenchmarkClientStreamedCall measures one streamed call (a sentence of
// text in 4-rune deltas and a tool call whose arguments come in 4-byte
// deltas: about 60 chunks) against the in-process fake model over loopback
// HTTP. It reports the median call time, the median of a bare net/http
// request reading the same stream, and their difference: the client's own
// overhead (request building, go-openai, assembly, events).
func BenchmarkClientStreamedCall(b *testing.B) {
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{
		Times:     -1,
		Text:      "I will read the handler first, then search for its callers.",
		ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"internal/server/handler.go","startLine":1}`}},
		Usage:     &llm.Usage{InputTokens: 1000, OutputTokens: 50},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake-model"})
	if err != nil {
		b.Fatal(err)
	}
	req := userReq("find the callers of Handle in the server package and explain them")
	req.Tools = []llm.ToolDef{{Name: "read_file", Description: "Read a file."}, {Name: "grep", Description: "Search."}}
	ctx := context.Background()
	if _, err := c.Complete(ctx, req, nil); err != nil {
		b.Fatal(err)
	}
	body := srv.Requests()[0].Body

	// Baseline: the same request and stream with net/http alone.
	raw := make([]time.Duration, 0, 300)
	hc := &http.Client{}
	for range 300 {
		t0 := time.Now()
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := hc.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(got), "[DONE]") {
			b.Fatalf("baseline stream incomplete: %s", got)
		}
		raw = append(raw, time.Since(t0))
	}

	calls := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		resp, err := c.Complete(ctx, req, func(llm.Event) {})
		if err != nil {
			b.Fatal(err)
		}
		calls = append(calls, time.Since(t0))
		if len(resp.Message.ToolCalls) != 1 {
			b.Fatal("call lost")
		}
	}
	b.StopTimer()
	m, base := median(calls), median(raw)
	b.ReportMetric(m, "median-µs/call")
	b.ReportMetric(base, "raw-http-median-µs")
	b.ReportMetric(m-base, "overhead-median-µs")
}
