package lsp_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentls/agentls/internal/benchstat"
	"github.com/agentls/agentls/lsp/lsptest"
)

// BenchmarkRequestsDuringSlowCommand: while a command that sleeps 2 s runs,
// 100 other requests are answered; it reports their median and p99 latency
// (goal: median < 5 ms).
func BenchmarkRequestsDuringSlowCommand(b *testing.B) {
	s := initialized(b, lsptest.Config{})
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		slowCtx, cancel := context.WithCancel(context.Background())
		slowDone := make(chan struct{})
		go func() {
			defer close(slowDone)
			_, _, _ = s.c.ExecuteCommand(slowCtx, "test.sleep", sleepArgs{Millis: 2000})
		}()
		for range 100 {
			start := time.Now()
			if _, _, err := s.c.ExecuteCommand(context.Background(), "test.echo", echoArgs{Text: "ping"}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		select {
		case <-slowDone:
			b.Fatal("the slow command ended before the 100 requests were answered")
		default:
		}
		cancel() // $/cancelRequest: the next iteration need not wait 2 s
		<-slowDone
	}
	b.StopTimer()
	b.ReportMetric(benchstat.Millis(benchstat.Median(lat)), "median-ms")
	b.ReportMetric(benchstat.Millis(benchstat.Percentile(lat, 99)), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
