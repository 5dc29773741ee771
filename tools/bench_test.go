//go:build unix

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/agentls/agentls/internal/benchstat"
	"github.com/agentls/agentls/internal/procmem"
	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
	"github.com/agentls/agentls/workspace/benchcorpus"
)

// benchCorpus is a tree of exactly n files made of copies of GOROOT/src
// (see benchcorpus.GoSource). Only benchmarks call it: `go test` without
// -bench never builds a corpus.
func benchCorpus(b *testing.B, n int) string {
	b.Helper()
	start := time.Now()
	dir, built, err := benchcorpus.GoSource(n)
	if err != nil {
		b.Fatal(err)
	}
	if built {
		b.Logf("built the %d-file corpus in %s in %v", n, dir, time.Since(start).Round(time.Second))
	}
	return dir
}

// benchQueries are searched by agentls and rg alike: "wide" ones have
// matches in many files, "selective" ones in a handful; all return fewer
// matching lines than the output cap, so every file is searched by both.
var benchQueries = []struct {
	name string
	args string
	rg   []string
}{
	{"wide_literal", `{"pattern":"utf8.RuneError","literal":true,"limit":1000}`, []string{"-F", "utf8.RuneError"}},
	{"wide_regex", `{"pattern":"func \\w+Reader\\(","limit":1000}`, []string{`func \w+Reader\(`}},
	{"selective_literal", `{"pattern":"hashMightPanic","literal":true,"limit":1000}`, []string{"-F", "hashMightPanic"}},
	{"selective_regex", `{"pattern":"func \\(\\w+ \\*Reader\\) ReadRune","limit":1000}`, []string{`func \(\w+ \*Reader\) ReadRune`}},
	{"selective_ignore_case", `{"pattern":"maxbacktrack","ignore_case":true,"limit":1000}`, []string{"-i", "maxbacktrack"}},
	// A case-insensitive literal with no match: every byte is searched.
	{"ignore_case_literal", `{"pattern":"WorkDoneProgress","literal":true,"ignore_case":true,"limit":1000}`, []string{"-i", "-F", "WorkDoneProgress"}},
	{"ignore_case_regex", `{"pattern":"(?i)unexpected eof","limit":1000}`, []string{"(?i)unexpected eof"}},
	// Regexes whose required text is common ("err != nil {") or short ("_", "(").
	{"common_literal_regex", `{"pattern":"err != nil \\{\\s*return","limit":1000}`, []string{`err != nil \{\s*return`}},
	{"short_literal_regex", `{"pattern":"\\w+_\\d{3}\\(","limit":1000}`, []string{`\w+_\d{3}\(`}},
	// Regexes with no literal at all.
	{"no_literal_blank", `{"pattern":"^[ \\t]+$","limit":1000}`, []string{`^[ \t]+$`}},
	{"no_literal_digits", `{"pattern":"^\\s*\\d{6,}\\s*$","limit":1000}`, []string{`^\s*\d{6,}\s*$`}},
}

// BenchmarkGrep runs the grep tool over a 53,000-file tree side by side
// with rg on the same tree, interleaved: each op runs every variant once,
// in turn, so load from other processes falls on all of them alike (page
// cache warm for all). Each figure is the median over the ops, wall time
// (-ms) and CPU time (-cpu-ms: user+system of this process, or of the rg
// child):
//
//   - first: the first grep of a task when nothing is built yet: a new,
//     empty filter (its background build starts and yields to the search)
//     and a new tool registry on the open workspace.
//   - walk+first: the same, plus opening the workspace, which walks the tree
//     and reads its ignore files (rg walks the tree too): what the very
//     first grep after the server starts pays, counting the walk.
//   - warm: a grep once the shared filter is built.
//   - rg: `rg --no-config -n --no-heading PATTERN .`, a process per query.
//
// first/rg and rg/warm are the ratios of the median wall times, first/rg-cpu
// that of the median CPU times.
func BenchmarkGrep(b *testing.B) {
	dir := benchCorpus(b, 53000)
	ctx := context.Background()
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{dir}, Watch: true})
	if err != nil {
		b.Fatalf("corpus %s: %v", dir, err)
	}
	defer ws.Close()
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Fatal("rg is not installed (make install installs ripgrep)")
	}
	out, _ := exec.Command(rg, "--no-config", "--files", dir).Output()
	b.Logf("corpus %s: %d files in the workspace, %d listed by rg --files; %d CPUs, GOMAXPROCS %d (plus the server's extra P while it searches)",
		dir, len(ws.Files()), bytes.Count(out, []byte{'\n'}), runtime.NumCPU(), runtime.GOMAXPROCS(0))

	shared := grep.NewIndex(0)
	defer shared.Close()
	start := time.Now()
	restore := ReserveProtocolProc() // as the server runs
	if err := StartGrepFilter(ws, shared); err != nil {
		b.Fatal(err)
	}
	shared.Wait()
	restore()
	n, size := shared.Stats()
	b.Logf("shared filter: %d files, %.1f MB of bit sets, built in %v", n, float64(size)/1e6, time.Since(start).Round(time.Millisecond))

	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			// As the server runs; set here, where it is undone, since
			// testing sets GOMAXPROCS for every benchmark it runs.
			defer ReserveProtocolProc()()
			var first, walk, warm, rgs, firstCPU, warmCPU, rgCPU []time.Duration
			warmReg := New(Env{Workspace: ws, Index: shared})
			defer warmReg.Close()
			for i := 0; i < b.N; i++ {
				// first
				idx := grep.NewIndex(0)
				c0, t0 := cpuTime(), time.Now()
				r := New(Env{Workspace: ws, Index: idx})
				runGrep(b, r, q.args)
				first, firstCPU = append(first, time.Since(t0)), append(firstCPU, cpuTime()-c0)
				r.Close()
				idx.Close()

				// walk+first
				t0 = time.Now()
				w, err := workspace.New(ctx, workspace.Options{Roots: []string{dir}})
				if err != nil {
					b.Fatal(err)
				}
				idx = grep.NewIndex(0)
				r = New(Env{Workspace: w, Index: idx})
				runGrep(b, r, q.args)
				walk = append(walk, time.Since(t0))
				r.Close()
				idx.Close()
				w.Close()

				// warm
				c0, t0 = cpuTime(), time.Now()
				runGrep(b, warmReg, q.args)
				warm, warmCPU = append(warm, time.Since(t0)), append(warmCPU, cpuTime()-c0)

				// rg
				args := append([]string{"--no-config", "-n", "--no-heading"}, q.rg...)
				cmd := exec.Command(rg, append(args, ".")...)
				cmd.Dir = dir
				cmd.Stdout = io.Discard
				t0 = time.Now()
				if err := cmd.Run(); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 1 {
						b.Fatalf("rg: %v", err)
					}
				}
				rgs = append(rgs, time.Since(t0))
				rgCPU = append(rgCPU, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
			ms, median := benchstat.Millis, benchstat.Median[time.Duration]
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(median(first)), "first-ms")
			b.ReportMetric(ms(median(walk)), "walk+first-ms")
			b.ReportMetric(ms(median(warm)), "warm-ms")
			b.ReportMetric(ms(median(rgs)), "rg-ms")
			b.ReportMetric(ms(median(firstCPU)), "first-cpu-ms")
			b.ReportMetric(ms(median(warmCPU)), "warm-cpu-ms")
			b.ReportMetric(ms(median(rgCPU)), "rg-cpu-ms")
			b.ReportMetric(float64(median(first))/float64(median(rgs)), "first/rg")
			// The same in CPU time: what the search costs, whatever else
			// the machine runs (its workers run at nice +10, rg does not).
			b.ReportMetric(float64(median(firstCPU))/float64(median(rgCPU)), "first/rg-cpu")
			b.ReportMetric(float64(median(rgs))/float64(median(warm)), "rg/warm")
		})
	}
}

// cpuTime is the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runGrep runs one grep call and fails the benchmark unless every file in
// scope was searched.
func runGrep(b *testing.B, r *Registry, args string) {
	b.Helper()
	res, err := r.Run(context.Background(), "grep", json.RawMessage(args))
	if err != nil || res.IsError {
		b.Fatalf("grep %s: %v %s", args, err, res.Text)
	}
	if out := res.Data.(*GrepOutput); !out.Complete {
		b.Fatalf("grep %s stopped at the output cap: pick a query with fewer matches", args)
	}
}

// BenchmarkGrepFilterMemory opens a 99,000-file workspace, builds the shared
// filter as a grep starts it (in the background, then handing freed pages
// back) and reports the process's resident memory afterwards (RSS-MB, from
// /proc/self/status), the live heap after a GC, the filter's own bytes and
// the bytes of its chunks mapped outside the Go heap.
// One op is one build from empty.
func BenchmarkGrepFilterMemory(b *testing.B) {
	b.Cleanup(ReserveProtocolProc()) // as the server runs
	dir := benchCorpus(b, 99000)
	ctx := context.Background()
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{dir}, Watch: true})
	if err != nil {
		b.Fatalf("corpus %s: %v", dir, err)
	}
	defer ws.Close()
	var idx *grep.Index
	for i := 0; i < b.N; i++ {
		if idx != nil {
			idx.Close()
		}
		idx = grep.NewIndex(0)
		files, _, err := wholeWorkspace(ws, idx)
		if err != nil {
			b.Fatal(err)
		}
		idx.Start(files, ws.Seq()) // as the first grep starts it
		idx.Wait()
		if !idx.Warm() {
			b.Fatal("the filter build did not complete")
		}
	}
	defer idx.Close()
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n, size := idx.Stats()
	b.ReportMetric(float64(procmem.Resident(b, procmem.Self))/1e6, "RSS-MB")
	b.ReportMetric(float64(ms.HeapAlloc)/1e6, "heap-MB")
	b.ReportMetric(float64(size)/1e6, "filter-MB")
	b.ReportMetric(float64(idx.OffHeap())/1e6, "offheap-MB") // the filter's chunks, outside heap-MB on Linux
	b.ReportMetric(float64(n), "files")
}
