package main

import (
	"testing"
	"time"

	"github.com/agentls/agentls/internal/benchstat"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/workspace/benchcorpus"
)

// BenchmarkServeInitialize measures what an editor waits for at start: from
// the moment it starts the built binary (`agentls serve`, a new process
// each op) to the initialize reply read from its stdout. The workspace is
// an empty folder, or the 53,000-file corpus of benchcorpus.GoSource (the
// walk of the workspace starts at initialize and runs beside the reply).
// It reports the median and the slowest op in ms; shutdown and exit are
// not timed.
func BenchmarkServeInitialize(b *testing.B) {
	bin := buildAgentls(b, b.TempDir())
	for _, ws := range []struct {
		name string
		root func(b *testing.B) string
	}{
		{"empty_folder", func(b *testing.B) string { return b.TempDir() }},
		{"corpus_53k", func(b *testing.B) string {
			dir, _, err := benchcorpus.GoSource(53000)
			if err != nil {
				b.Fatal(err)
			}
			return dir
		}},
	} {
		b.Run(ws.name, func(b *testing.B) {
			root := ws.root(b)
			cfg := lsptest.Config{Roots: []string{root}}
			var took []time.Duration
			for range b.N {
				env := serveEnv(b)
				start := time.Now()
				p := lsptest.StartProcess(b, bin, []string{"serve"}, env, cfg)
				if _, err := p.Initialize(ctxT(b)); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				b.StopTimer()
				_ = p.Shutdown(ctxT(b))
				_ = p.Exit(ctxT(b))
				if code, err := p.Wait(5 * time.Second); err != nil || code != 0 {
					b.Fatalf("exit code %d, %v", code, err)
				}
				b.StartTimer()
			}
			b.ReportMetric(benchstat.Millis(benchstat.Median(took)), "median-ms")
			b.ReportMetric(benchstat.Millis(benchstat.Percentile(took, 100)), "max-ms")
		})
	}
}
