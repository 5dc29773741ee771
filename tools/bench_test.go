package tools

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// benchCorpus is $AGENTLS_BENCH_CORPUS, else the Go source tree.
func benchCorpus(b *testing.B) string {
	if dir := os.Getenv("AGENTLS_BENCH_CORPUS"); dir != "" {
		return dir
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return runtime.GOROOT() + "/src"
	}
	return strings.TrimSpace(string(out)) + "/src"
}

// BenchmarkGrep runs the grep tool over a real tree, side by side with rg
// on the same tree in the same run, and reports ms per query for each:
// "agentls" (cold: no warm index; the file list comes from the workspace
// index, contents from the disk), "agentls-warm" (after the trigram filter
// is built) and "rg". Queries return fewer matches than the output cap, so
// every file is searched by both.
func BenchmarkGrep(b *testing.B) {
	dir := benchCorpus(b)
	ctx := context.Background()
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{dir}, Watch: true})
	if err != nil {
		b.Skipf("corpus %s: %v", dir, err)
	}
	defer ws.Close()
	b.Logf("corpus %s: %d files", dir, len(ws.Files()))
	rg, rgErr := exec.LookPath("rg")

	queries := []struct {
		name string
		args string
		rg   []string
	}{
		// The three: a literal, a regexp, a case-insensitive pattern.
		{"literal", `{"pattern":"ErrUnexpectedEOF","literal":true,"limit":1000}`, []string{"-F", "ErrUnexpectedEOF"}},
		{"regex", `{"pattern":"func \\w+Reader\\(","limit":1000}`, []string{`func \w+Reader\(`}},
		{"ignore_case", `{"pattern":"errunexpectedeof","ignore_case":true,"limit":1000}`, []string{"-i", "errunexpectedeof"}},
		// Selective: a handful of files match.
		{"selective_literal", `{"pattern":"hashMightPanic","literal":true,"limit":1000}`, []string{"-F", "hashMightPanic"}},
		{"selective_regex", `{"pattern":"func \\(\\w+ \\*Reader\\) ReadRune","limit":1000}`, []string{`func \(\w+ \*Reader\) ReadRune`}},
		{"selective_ignore_case", `{"pattern":"maxbacktrack","ignore_case":true,"limit":1000}`, []string{"-i", "maxbacktrack"}},
	}
	warmIndex := grep.NewIndex(0)
	start := time.Now()
	files, err := grepFiles(warmIndex, ws.Files(), nil)
	if err != nil {
		b.Fatal(err)
	}
	warmIndex.Synced(ws.Seq())
	if err := warmIndex.Build(ctx, files); err != nil {
		b.Fatal(err)
	}
	n, size := warmIndex.Stats()
	b.Logf("watching: %v", ws.Watching())
	b.Logf("warm index: %d files, %.1f MB of filters, built in %v", n, float64(size)/1e6, time.Since(start).Round(time.Millisecond))

	for _, q := range queries {
		b.Run(q.name+"/agentls", func(b *testing.B) {
			r := New(Env{Workspace: ws})
			defer r.Close()
			runGrepBench(b, r, q.args)
		})
		b.Run(q.name+"/agentls-warm", func(b *testing.B) {
			r := New(Env{Workspace: ws, Index: warmIndex})
			defer r.Close()
			runGrepBench(b, r, q.args)
		})
		b.Run(q.name+"/rg", func(b *testing.B) {
			if rgErr != nil {
				b.Skip("rg is not installed (make install installs ripgrep)")
			}
			args := append([]string{"--no-heading", "-n", "--no-config"}, q.rg...)
			args = append(args, ".")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(rg, args...)
				cmd.Dir = dir
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
						b.Fatalf("rg: %v", err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/query")
		})
	}
}

func runGrepBench(b *testing.B, r *Registry, args string) {
	b.Helper()
	var last Result
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := r.Run(context.Background(), "grep", json.RawMessage(args))
		if err != nil || res.IsError {
			b.Fatalf("grep %s: %v %s", args, err, res.Text)
		}
		last = res
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/query")
	out := last.Data.(*GrepOutput)
	if !out.Complete {
		b.Fatalf("grep %s stopped at the output cap: pick a query with fewer matches", args)
	}
	b.ReportMetric(float64(out.Matches), "matches")
}
