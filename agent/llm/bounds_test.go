package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
)

// endless serves a chat completion stream that never finishes: chunk(i) is
// the JSON of the i-th chunk. It counts the bytes it sent.
func endless(t testing.TB, chunk func(i int) string) (*httptest.Server, *atomic.Int64) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; r.Context().Err() == nil; i++ {
			n, err := fmt.Fprintf(w, "data: %s\n\n", chunk(i))
			if err != nil {
				return
			}
			sent.Add(int64(n))
			if i%64 == 0 {
				fl.Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &sent
}

func textChunk(int) string {
	return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("all work and no play ", 20) + `"}}]}`
}

func argsChunk(i int) string {
	if i == 0 {
		return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"content\":\""}}]}}]}`
	}
	return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + strings.Repeat("x", 400) + `"}}]}}]}`
}

func emptyChunk(int) string {
	return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{}}],"padding":"` + strings.Repeat(" ", 1000) + `"}`
}

// TestEndlessStreamsFailWithTheLimitNamed: a model service that streams
// without end (text, one tool call's arguments, or empty chunks) is cut off
// at the client's limit with a permanent error that names it, after reading
// no more than the limit allows.
func TestEndlessStreamsFailWithTheLimitNamed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chunk func(int) string
		cfg   llm.Config
		want  string
	}{
		{"text", textChunk, llm.Config{MaxResponseBytes: 256 << 10}, "response exceeded agentls's limit of 256 KiB"},
		{"tool arguments", argsChunk, llm.Config{MaxToolArgsBytes: 128 << 10}, "arguments of one tool call (write_file) exceeded agentls's limit of 128 KiB"},
		{"empty chunks", emptyChunk, llm.Config{MaxStreamBytes: 1 << 20}, "streamed answer exceeded agentls's limit of 1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := endless(t, tc.chunk)
			cfg := tc.cfg
			cfg.BaseURL, cfg.APIKey, cfg.Model = srv.URL+"/v1", "sk-test", "m"
			c, err := llm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = c.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, func(llm.Event) {})
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindTooLarge || e.Attempts != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Complete = %v; want a permanent too_large error after one attempt naming %q", err, tc.want)
			}
		})
	}
}

// BenchmarkEndlessStreamPeakHeap measures the client's peak heap while a
// service streams an answer without end, under the default limits: the
// answer is refused at its limit, so memory stays bounded.
func BenchmarkEndlessStreamPeakHeap(b *testing.B) {
	srv, sent := endless(b, textChunk)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	b.ResetTimer()
	for range b.N {
		_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, func(llm.Event) {})
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindTooLarge {
			b.Fatalf("Complete = %v; want too_large", err)
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(sent.Load())/float64(b.N)/(1<<20), "MB-streamed/op")
}
