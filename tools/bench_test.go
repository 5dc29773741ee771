package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// benchCorpus returns a tree of exactly n files made of copies of the Go
// source tree (GOROOT/src), cached under os.UserCacheDir()/agentls-bench so
// later runs reuse it. $AGENTLS_BENCH_CORPUS replaces it when set. Only
// benchmarks call it: `go test` without -bench never builds a corpus.
func benchCorpus(b *testing.B, n int) string {
	b.Helper()
	if dir := os.Getenv("AGENTLS_BENCH_CORPUS"); dir != "" {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		b.Fatalf("no cache folder for the benchmark corpus: %v", err)
	}
	dir := filepath.Join(cache, "agentls-bench", fmt.Sprintf("gosrc-%d", n))
	done := dir + ".complete" // beside the tree, so it holds exactly n files
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	goroot := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	src := filepath.Join(goroot, "src")
	var rels []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(src, p)
			rels = append(rels, rel)
		}
		return nil
	})
	if err != nil || len(rels) == 0 {
		b.Fatalf("list %s: %v (%d files)", src, err, len(rels))
	}
	start := time.Now()
	os.RemoveAll(dir)
	for made := 0; made < n; {
		for _, rel := range rels {
			if made == n {
				break
			}
			dst := filepath.Join(dir, fmt.Sprintf("copy%d", made/len(rels)), rel)
			if err := copyFile(filepath.Join(src, rel), dst); err != nil {
				b.Fatalf("build the corpus: %v", err)
			}
			made++
		}
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("built the %d-file corpus in %s in %v", n, dir, time.Since(start).Round(time.Second))
	return dir
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
}

// BenchmarkGrep runs the grep tool over a 53,000-file tree side by side
// with rg on the same tree in the same run (page cache warm for both).
// ms/query is the figure to read; each row's name says what one op pays:
//
//   - first/agentls: the first grep of a task when nothing is built yet:
//     a new, empty filter (its background build starts and yields to the
//     search) and a new tool registry on the open workspace.
//   - first+walk/agentls: the same, plus opening the workspace, which walks
//     the tree and reads its ignore files (rg walks the tree too): what the
//     very first grep after the server starts pays, counting the walk.
//   - warm/agentls: a grep once the shared filter is built.
//   - rg: `rg --no-config -n --no-heading PATTERN .`, a process per query.
func BenchmarkGrep(b *testing.B) {
	dir := benchCorpus(b, 53000)
	ctx := context.Background()
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{dir}, Watch: true})
	if err != nil {
		b.Fatalf("corpus %s: %v", dir, err)
	}
	defer ws.Close()
	rg, rgErr := exec.LookPath("rg")
	if rgErr == nil {
		out, _ := exec.Command(rg, "--no-config", "--files", dir).Output()
		b.Logf("corpus %s: %d files in the workspace, %d listed by rg --files; %d CPUs, GOMAXPROCS %d",
			dir, len(ws.Files()), bytes.Count(out, []byte{'\n'}), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	}

	shared := grep.NewIndex(0)
	defer shared.Close()
	start := time.Now()
	files, err := grepFiles(shared, ws.Files(), nil)
	if err != nil {
		b.Fatal(err)
	}
	shared.Synced(ws.Seq())
	if err := shared.Build(ctx, files); err != nil {
		b.Fatal(err)
	}
	n, size := shared.Stats()
	b.Logf("shared filter: %d files, %.1f MB of bit sets, built in %v", n, float64(size)/1e6, time.Since(start).Round(time.Millisecond))

	for _, q := range benchQueries {
		b.Run(q.name+"/first/agentls", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				idx := grep.NewIndex(0)
				b.StartTimer()
				r := New(Env{Workspace: ws, Index: idx})
				runGrep(b, r, q.args)
				b.StopTimer()
				r.Close()
				idx.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/query")
		})
		b.Run(q.name+"/first+walk/agentls", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				w, err := workspace.New(ctx, workspace.Options{Roots: []string{dir}})
				if err != nil {
					b.Fatal(err)
				}
				idx := grep.NewIndex(0)
				r := New(Env{Workspace: w, Index: idx})
				runGrep(b, r, q.args)
				b.StopTimer()
				r.Close()
				idx.Close()
				w.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/query")
		})
		b.Run(q.name+"/warm/agentls", func(b *testing.B) {
			r := New(Env{Workspace: ws, Index: shared})
			defer r.Close()
			for i := 0; i < b.N; i++ {
				runGrep(b, r, q.args)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/query")
		})
		b.Run(q.name+"/rg", func(b *testing.B) {
			if rgErr != nil {
				b.Fatal("rg is not installed (make install installs ripgrep)")
			}
			args := append([]string{"--no-config", "-n", "--no-heading"}, q.rg...)
			args = append(args, ".")
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(rg, args...)
				cmd.Dir = dir
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 1 {
						b.Fatalf("rg: %v", err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/query")
		})
	}
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
// /proc/self/status), the live heap after a GC and the filter's own bytes.
// One op is one build from empty.
func BenchmarkGrepFilterMemory(b *testing.B) {
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
		files, err := grepFiles(idx, ws.Files(), nil)
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
	b.ReportMetric(float64(rssBytes(b))/1e6, "RSS-MB")
	b.ReportMetric(float64(ms.HeapAlloc)/1e6, "heap-MB")
	b.ReportMetric(float64(size)/1e6, "filter-MB")
	b.ReportMetric(float64(n), "files")
}

// rssBytes is the resident set size of this process (Linux).
func rssBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatalf("RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("RSS: %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatal("RSS: no VmRSS line in /proc/self/status")
	return 0
}
