package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/internal/benchstat"
)

// benchCorpus is the tree BenchmarkIndex indexes: AGENTLS_BENCH_CORPUS, or
// the Go source tree (about 15,000 files, on every machine with Go).
func benchCorpus(b *testing.B) string {
	if dir := os.Getenv("AGENTLS_BENCH_CORPUS"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			b.Fatal(err)
		}
		return abs
	}
	goroot := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	return filepath.Join(goroot, "src")
}

// timeCommand runs name args in dir a few times and returns the best wall
// time and the number of output lines.
func timeCommand(dir, name string, args ...string) (time.Duration, int, error) {
	best := time.Duration(0)
	lines := 0
	for i := 0; i < 3; i++ {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			return 0, 0, err
		}
		if best == 0 || d < best {
			best = d
		}
		lines = strings.Count(string(out), "\n")
	}
	return best, lines, nil
}

// BenchmarkIndex builds the file index of a real tree and reports, side by
// side with `rg --files` and `git ls-files` on the same tree: build time,
// heap held by the index, and warm query times for **/*.go and
// **/*_test.go. ns/op is one index build.
func BenchmarkIndex(b *testing.B) {
	corpus := benchCorpus(b)
	if _, err := os.Stat(corpus); err != nil {
		b.Skipf("no corpus: %v", err)
	}
	ctx := context.Background()
	// Warm the file system cache for everyone alike.
	if _, err := New(ctx, Options{Roots: []string{corpus}}); err != nil {
		b.Fatal(err)
	}

	var w *Workspace
	var builds []time.Duration
	for b.Loop() {
		start := time.Now()
		var err error
		w, err = New(ctx, Options{Roots: []string{corpus}})
		if err != nil {
			b.Fatal(err)
		}
		builds = append(builds, time.Since(start))
	}
	b.StopTimer()
	build := benchstat.Median(builds)
	files := len(w.Files())
	b.ReportMetric(benchstat.Millis(build), "build-ms")
	b.ReportMetric(float64(files), "files")

	if _, err := exec.LookPath("rg"); err != nil {
		b.Log("rg not installed (make install installs ripgrep): skipping the rg comparison")
	} else if d, n, err := timeCommand(corpus, "rg", "--files"); err != nil {
		b.Logf("rg --files: %v", err)
	} else {
		b.ReportMetric(benchstat.Millis(d), "rg-ms")
		b.ReportMetric(float64(build)/float64(d), "build/rg")
		b.Logf("rg --files: %v for %d files; index build %v for %d files", d, n, build, files)
	}
	if _, err := exec.LookPath("git"); err == nil {
		if err := exec.Command("git", "-C", corpus, "rev-parse", "--is-inside-work-tree").Run(); err == nil {
			if d, n, err := timeCommand(corpus, "git", "ls-files"); err == nil {
				b.ReportMetric(benchstat.Millis(d), "git-ms")
				b.Logf("git ls-files: %v for %d files", d, n)
			}
		} else {
			b.Logf("%s is not a git checkout: no git ls-files comparison", corpus)
		}
	}

	// Heap held by one index: HeapAlloc after GC, with and without it.
	w = nil
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	held, err := New(ctx, Options{Roots: []string{corpus}})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "index-MB")

	for _, q := range []struct{ pat, unit string }{{"**/*.go", "query-go-µs"}, {"**/*_test.go", "query-test-µs"}} {
		const n = 50
		var got []Path
		start := time.Now()
		for i := 0; i < n; i++ {
			got, err = held.Glob(q.pat)
			if err != nil {
				b.Fatal(err)
			}
		}
		per := time.Since(start) / n
		b.ReportMetric(float64(per.Nanoseconds())/1000, q.unit)
		b.Logf("Glob(%s): %d files in %v", q.pat, len(got), per)
	}
	runtime.KeepAlive(held)
}
