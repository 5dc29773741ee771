package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/benchstat"
	"github.com/agentls/agentls/internal/procmem"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/workspace/benchcorpus"
)

// doorQuery is one search of the benchmark at the user's door: the grep
// arguments agentls gets and the ripgrep 13 arguments that ask the same.
type doorQuery struct {
	class   string // literal, regex, case-insensitive, no-literal
	grep    string // grep tool arguments without limit, as JSON fields
	rg      []string
	display string
}

var doorQueries = []doorQuery{
	{"literal", `"pattern":"hashMightPanic","literal":true`, []string{"-F", "hashMightPanic"}, "`hashMightPanic`"},
	{"literal", `"pattern":"ErrUnexpectedEOF","literal":true`, []string{"-F", "ErrUnexpectedEOF"}, "`ErrUnexpectedEOF`"},
	{"regex", `"pattern":"func \\w+Reader\\("`, []string{`func \w+Reader\(`}, "`func \\w+Reader\\(`"},
	{"regex", `"pattern":"err != nil \\{\\s*return"`, []string{`err != nil \{\s*return`}, "`err != nil \\{\\s*return`"},
	{"case-insensitive", `"pattern":"maxbacktrack","ignore_case":true`, []string{"-i", "maxbacktrack"}, "`(?i)maxbacktrack`"},
	{"case-insensitive", `"pattern":"(?i)workdoneprogress"`, []string{"(?i)workdoneprogress"}, "`(?i)workdoneprogress`"},
	{"no-literal", `"pattern":"^[ \\t]+$"`, []string{`^[ \t]+$`}, "`^[ \\t]+$`"},
	{"no-literal", `"pattern":"\\w+_\\d{3}\\("`, []string{`\w+_\d{3}\(`}, "`\\w+_\\d{3}\\(`"},
}

// doorRow is one line of the table: agentls's times and its anchor's, in
// the order they were taken (interleaved), and the load average then.
type doorRow struct {
	what, query, anchor string
	ours, theirs        []time.Duration
	load                []float64
}

func (r doorRow) ratio() float64 { return ms(median(r.ours)) / ms(median(r.theirs)) }

// worst is the highest ratio of one agentls time to the anchor time taken
// beside it.
func (r doorRow) worst() float64 {
	w := 0.0
	for i := range min(len(r.ours), len(r.theirs)) {
		w = max(w, ms(r.ours[i])/ms(r.theirs[i]))
	}
	return w
}

// The table's figures, computed as every benchmark computes them.
var (
	ms     = benchstat.Millis
	median = benchstat.Median[time.Duration]
	pct    = benchstat.Percentile[time.Duration]
)

// loadAvg is the one-minute load average.
func loadAvg() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// timeRun runs a program in dir with its output read to the end through
// a pipe, as a user's shell or an agent's harness reads it, and returns
// its wall time.
func timeRun(b *testing.B, dir string, env []string, name string, args ...string) time.Duration {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	took := time.Since(start)
	// rg exits 1 when nothing matched, agentls tool when the result is an
	// error (no match is not one); anything else is a failure.
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
		b.Fatalf("%s %q: %v\n%s", name, args, err, errb.Bytes())
	}
	return took
}

// BenchmarkAtTheDoor takes each figure the way a user meets it, each as a
// ratio against its anchor (ripgrep, /usr/bin/rg) timed beside it in the
// same run, with the load average of the moment, and prints one table:
//   - `agentls tool grep` and `agentls tool list_files` as fresh processes
//     on GOROOT/src against `rg` and `rg --files`, query class by class;
//   - the first and later searches of a task through `agentls serve` over
//     stdio on a 55,000-file workspace (5 copies of GOROOT/src), from the
//     model request that asked for grep to the next model request, for a
//     task started right after initialize and one started once the search
//     filter is built, against rg on the same tree;
//   - the editor's codeAction latency (p50, p99) idle and while two tasks
//     search, and the server's peak RSS.
//
// $AGENTLS_BENCH_TABLE names a file the table is also written to (make
// bench prints it at the end). Run alone with
// `go test -run '^$' -bench AtTheDoor -benchtime 1x ./cmd/agentls-core/`.
func BenchmarkAtTheDoor(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Fatal("ripgrep (rg) is the anchor of every search figure: ", err)
	}
	bin := buildAgentls(b, b.TempDir())
	corpus, built, err := benchcorpus.GoSource(55000)
	if err != nil {
		b.Fatal(err)
	}
	if built {
		b.Logf("built the 55,000-file corpus in %s", corpus)
	}
	gosrc := filepath.Join(build.Default.GOROOT, "src")
	reps := 3
	if v, err := strconv.Atoi(os.Getenv("AGENTLS_BENCH_REPS")); err == nil && v > 0 {
		reps = v
	}
	for range b.N {
		var rows []doorRow
		started := time.Now()
		load0 := loadAvg()
		env := serveEnv(b)

		// The command line: fresh processes, interleaved with rg, after one
		// untimed run of each (hyperfine's --warmup): the first process of
		// the run would otherwise fill the page cache (the tree's folders
		// and files, the program's own pages) that the other then finds.
		if doorPart("tool") {
			timeRun(b, gosrc, env, bin, "tool", "grep", `{"pattern":"warmUp","limit":1}`)
			timeRun(b, gosrc, env, rg, "--no-config", "-n", "warmUp")
		}
		for _, q := range doorQueries {
			if !doorPart("tool") {
				break
			}
			r := doorRow{what: "`agentls tool grep` (" + q.class + ")", query: q.display, anchor: "rg"}
			args := `{` + q.grep + `,"limit":1000}`
			for range reps {
				r.load = append(r.load, loadAvg())
				r.ours = append(r.ours, timeRun(b, gosrc, env, bin, "tool", "grep", args))
				r.theirs = append(r.theirs, timeRun(b, gosrc, env, rg, append([]string{"--no-config", "-n"}, q.rg...)...))
			}
			rows = append(rows, r)
		}
		lf := doorRow{what: "`agentls tool list_files`", query: "whole tree", anchor: "rg --files"}
		for range reps {
			if !doorPart("tool") {
				break
			}
			lf.load = append(lf.load, loadAvg())
			lf.ours = append(lf.ours, timeRun(b, gosrc, env, bin, "tool", "list_files", `{"limit":100000}`))
			lf.theirs = append(lf.theirs, timeRun(b, gosrc, env, rg, "--no-config", "--files"))
		}
		if doorPart("tool") {
			rows = append(rows, lf)
		}

		// Through the server: a task started right after initialize, on a
		// new server per query, then tasks on one server whose filter is
		// built.
		var first, later, warmFirst, warmLater []doorRow
		var rss []float64
		// Every row compares warm page caches: rg reads the corpus once
		// before the first server does (the tool rows read GOROOT/src,
		// another tree).
		timeRun(b, corpus, env, rg, "--no-config", "-c", "hashMightPanic")
		for _, q := range doorQueries {
			if !doorPart("first") {
				break
			}
			f := doorRow{what: "first search of a task started at initialize (" + q.class + ")", query: q.display, anchor: "rg"}
			l := doorRow{what: "later searches of that task (" + q.class + ")", query: q.display, anchor: "rg"}
			for range max(1, reps/2) {
				f.load = append(f.load, loadAvg())
				s := startDoorServerTurns(b, bin, corpus, false, doorTurns(q, "T0"))
				d := s.task(b, "T0")
				rss = append(rss, s.stop(b))
				f.ours = append(f.ours, d[0])
				l.ours = append(l.ours, d[1:]...)
				t := timeRun(b, corpus, env, rg, append([]string{"--no-config", "-n"}, q.rg...)...)
				f.theirs = append(f.theirs, t)
				for range d[1:] {
					l.theirs = append(l.theirs, t)
				}
			}
			first, later = append(first, f), append(later, l)
		}
		var s *doorServer
		if doorPart("warm") || doorPart("editor") {
			s = startDoorServer(b, bin, corpus, true)
		}
		for i := range reps {
			if !doorPart("warm") {
				break
			}
			for j, q := range doorQueries {
				if i == 0 {
					warmFirst = append(warmFirst, doorRow{what: "first search of a task started once the filter is built (" + q.class + ")", query: q.display, anchor: "rg"})
					warmLater = append(warmLater, doorRow{what: "later searches of that task (" + q.class + ")", query: q.display, anchor: "rg"})
				}
				warmFirst[j].load = append(warmFirst[j].load, loadAvg())
				d := s.task(b, fmt.Sprintf("W%d-%d", i, j))
				t := timeRun(b, corpus, env, rg, append([]string{"--no-config", "-n"}, q.rg...)...)
				warmFirst[j].ours, warmFirst[j].theirs = append(warmFirst[j].ours, d[0]), append(warmFirst[j].theirs, t)
				warmLater[j].ours = append(warmLater[j].ours, d[1:]...)
				for range d[1:] {
					warmLater[j].theirs = append(warmLater[j].theirs, t)
				}
			}
		}
		rows = append(rows, first...)
		rows = append(rows, later...)
		rows = append(rows, warmFirst...)
		rows = append(rows, warmLater...)

		// The editor while two tasks search.
		var idle, loaded []time.Duration
		var lload [2]float64
		if doorPart("editor") {
			idle, loaded, lload = s.editorLatency(b)
		}
		if s != nil {
			rss = append(rss, s.stop(b))
		}

		// The completion and MCP paths.
		pload := [2]float64{loadAvg()}
		var completion, model, through, direct []time.Duration
		if doorPart("paths") {
			completion, model = doorCompletion(b, bin, 200)
			pload[1] = loadAvg()
			through, direct = doorMCP(b, bin, 30)
		}

		var out strings.Builder
		fmt.Fprintf(&out, "agentls at the user's door, %s, %d CPUs; load average %.2f at start, %.2f at end; %v\n",
			time.Now().UTC().Format("2006-01-02 15:04 UTC"), numCPU(), load0, loadAvg(), time.Since(started).Round(time.Second))
		fmt.Fprintf(&out, "command: go test -run '^$' -bench AtTheDoor -benchtime 1x ./cmd/agentls-core/ (AGENTLS_BENCH_REPS=%d)\n", reps)
		fmt.Fprintf(&out, "tool rows on %s (%d files), server rows on %s (55,000 files); ratio = median agentls / median anchor, worst = highest ratio of one pair timed side by side\n\n", gosrc, countFiles(gosrc), corpus)
		fmt.Fprintf(&out, "| what | query | agentls ms (median) | anchor | anchor ms | ratio | worst pair | load avg |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&out, "| %s | %s | %.0f | %s | %.0f | %.2fx | %.2fx | %s |\n", r.what, r.query, ms(median(r.ours)), r.anchor, ms(median(r.theirs)), r.ratio(), r.worst(), loadRange(r.load))
		}
		if doorPart("editor") {
			fmt.Fprintf(&out, "| editor `textDocument/codeAction` idle | %d requests | p50 %.2f, p99 %.2f | | | | | %.2f |\n", len(idle), ms(pct(idle, 50)), ms(pct(idle, 99)), lload[0])
			fmt.Fprintf(&out, "| editor `textDocument/codeAction` while two tasks search | %d requests | p50 %.2f, p99 %.2f | idle p99 | %.2f | %.2fx | | %.2f |\n", len(loaded), ms(pct(loaded, 50)), ms(pct(loaded, 99)), ms(pct(idle, 99)), ms(pct(loaded, 99))/ms(pct(idle, 99)), lload[1])
		}
		if len(rss) > 0 {
			fmt.Fprintf(&out, "| peak RSS of `agentls serve` (VmHWM), highest of %d servers | 55,000 files | %.1f MB | goal | 150 MB | %.2fx | | |\n", len(rss), slices.Max(rss), slices.Max(rss)/150)
		}
		if doorPart("paths") {
			out.WriteString(pathLines(completion, model, through, direct, pload))
		}
		worst := map[string]float64{}
		for _, r := range rows {
			k := r.what
			if i := strings.Index(k, " ("); i >= 0 {
				k = k[:i]
			}
			worst[k] = max(worst[k], r.ratio())
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range worst {
				if !yield(k) {
					return
				}
			}
		})
		fmt.Fprintf(&out, "\nworst median ratio by row kind:\n")
		for _, k := range keys {
			fmt.Fprintf(&out, "- %s: %.2fx\n", k, worst[k])
		}
		// On stdout, whole: a benchmark's log is cut to its first lines.
		fmt.Print(out.String())
		if p := os.Getenv("AGENTLS_BENCH_TABLE"); p != "" {
			if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
				b.Error(err)
			}
		}
	}
}

// doorPart reports whether the table's part named part is taken in this
// run: every part, unless $AGENTLS_BENCH_ONLY lists some of tool, first,
// warm, editor and paths (comma-separated), for a look at one part while
// working on it. The table of record is the whole one.
func doorPart(part string) bool {
	only := os.Getenv("AGENTLS_BENCH_ONLY")
	return only == "" || slices.Contains(strings.Split(only, ","), part)
}

func loadRange(v []float64) string {
	if len(v) == 0 {
		return ""
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if hi-lo < 0.01 {
		return fmt.Sprintf("%.2f", lo)
	}
	return fmt.Sprintf("%.2f-%.2f", lo, hi)
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, bytes.Count(b, []byte("processor\t")))
}

func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// doorServer is `agentls serve` over stdio with a scripted model whose
// script the benchmark extends task by task.
type doorServer struct {
	p     *lsptest.Process
	model *doorModel
	root  string
	open  string
}

// doorModel hands fakemodel the turns of the task being run: a model
// server per task would change its address, so one server serves a
// script of every task named up front.
type doorModel struct {
	*fakemodel.Server
}

// doorTurns scripts one task told apart by tag: the same grep three
// times (the limit differs so the agent does not stop a repeated call),
// then an answer.
func doorTurns(q doorQuery, tag string) []fakemodel.Turn {
	var turns []fakemodel.Turn
	for i := range 3 {
		turns = append(turns, fakemodel.Turn{
			Match:     &fakemodel.Match{AnyMessage: tag + ":"},
			ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("%s-%d", tag, i), Name: "grep", Arguments: fakemodel.Args(`{` + q.grep + fmt.Sprintf(`,"limit":%d}`, 1000-i))}},
		})
	}
	return append(turns, fakemodel.Turn{Match: &fakemodel.Match{AnyMessage: tag + ":"}, Text: tag + " searched.", FinishReason: "stop"})
}

// editorSearchTurns scripts a task that greps n times, then answers.
func editorSearchTurns(tag string, n int) []fakemodel.Turn {
	var turns []fakemodel.Turn
	for i := range n {
		q := doorQueries[i%len(doorQueries)]
		turns = append(turns, fakemodel.Turn{
			Match:     &fakemodel.Match{AnyMessage: tag + ":"},
			ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("%s-%d", tag, i), Name: "grep", Arguments: fakemodel.Args(`{` + q.grep + fmt.Sprintf(`,"limit":%d}`, 1000-i/len(doorQueries)))}},
		})
	}
	return append(turns, fakemodel.Turn{Match: &fakemodel.Match{AnyMessage: tag + ":"}, Text: tag + " searched.", FinishReason: "stop"})
}

const editorSearches = 48

func startDoorServer(b *testing.B, bin, root string, waitFilter bool) *doorServer {
	var turns []fakemodel.Turn
	for i := range 20 {
		for j, q := range doorQueries {
			turns = append(turns, doorTurns(q, fmt.Sprintf("W%d-%d", i, j))...)
		}
	}
	turns = append(turns, editorSearchTurns("EA", editorSearches)...)
	turns = append(turns, editorSearchTurns("EB", editorSearches)...)
	turns = append(turns, editorSearchTurns("WARM", 1)...)
	return startDoorServerTurns(b, bin, root, waitFilter, turns)
}

// profiles counts the servers started with profiles (AGENTLS_BENCH_PROFILE).
var profiles int

func startDoorServerTurns(b *testing.B, bin, root string, waitFilter bool, turns []fakemodel.Turn) *doorServer {
	m, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		b.Fatal(err)
	}
	env := append(serveEnv(b), "OPENAI_API_KEY=sk-door-bench", "OPENAI_BASE_URL="+m.URL(), "AGENTLS_MODEL=test-model")
	args := []string{"serve", "--log-file", "-"}
	if dir := os.Getenv("AGENTLS_BENCH_PROFILE"); dir != "" {
		// Where a server's time and memory went: one CPU and one heap
		// profile per server, numbered in the order they started.
		profiles++
		args = append(args, "--profile.cpu", filepath.Join(dir, fmt.Sprintf("serve-%02d.cpu", profiles)),
			"--profile.mem", filepath.Join(dir, fmt.Sprintf("serve-%02d.mem", profiles)))
	}
	p := lsptest.StartProcess(b, bin, args, env, lsptest.Config{
		WorkDoneProgress: true, ApplyEdit: true, CodeActionLiterals: true, Roots: []string{root},
		InitializationOptions: map[string]any{"validate": "off", "maxTurns": editorSearches + 5},
	})
	s := &doorServer{p: p, model: &doorModel{m}, root: root, open: filepath.Join(root, "copy0", "bufio", "bufio.go")}
	if _, err := p.Initialize(ctxT(b)); err != nil {
		b.Fatal(err)
	}
	if waitFilter {
		// The filter's build starts with the workspace of the first task.
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		raw, _, err := s.p.ExecuteCommand(wctx, lsp.CommandRun, map[string]any{"prompt": "WARM: search", "mode": "ask"})
		cancel()
		if err != nil {
			b.Fatalf("warm-up task: %s, %v", raw, err)
		}
		s.p.Await(10*time.Minute, "search filter built", func(st *lsptest.State) bool { return st.HasLogMessage("search filter built") })
		for _, m := range s.p.Snapshot().LogMessages {
			if strings.Contains(m.Message, "search filter built") {
				b.Logf("%s", m.Message)
			}
		}
	}
	return s
}

// task runs one task scripted by doorTurns(q, tag) and returns the time
// from each model request that asked for grep to the next model request.
func (s *doorServer) task(b *testing.B, tag string) []time.Duration {
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	raw, _, err := s.p.ExecuteCommand(rctx, lsp.CommandRun, map[string]any{"prompt": tag + ": search", "mode": "ask"})
	if err != nil {
		b.Fatal(err)
	}
	var r lsp.RunReply
	if err := json.Unmarshal(raw, &r); err != nil || r.Status != "completed" {
		b.Fatalf("task %s: %s, %v", tag, raw, err)
	}
	var times []time.Time
	for _, req := range s.model.Requests() {
		if len(req.Chat.Messages) > 0 && strings.Contains(contentOfFirstUser(req), tag+":") {
			times = append(times, req.Time)
		}
	}
	if len(times) != 4 {
		b.Fatalf("task %s: %d model requests, want 4", tag, len(times))
	}
	var d []time.Duration
	for i := 1; i < len(times); i++ {
		d = append(d, times[i].Sub(times[i-1]))
	}
	return d
}

func contentOfFirstUser(req fakemodel.RecordedRequest) string {
	for _, m := range req.Chat.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// editorLatency measures codeAction round trips over the pipe: first idle
// (no task), then while two tasks search, one request at a time 1 ms
// apart. It returns both samples and the load average of each phase.
func (s *doorServer) editorLatency(b *testing.B) (idle, loaded []time.Duration, load [2]float64) {
	text, err := os.ReadFile(s.open)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.p.OpenDocument(ctxT(b), s.open, "go", string(text)); err != nil {
		b.Fatal(err)
	}
	ap := lsptest.QuickFixProbe(s.open)
	one := func(ctx context.Context) time.Duration { return s.p.TimeCodeAction(ctx, ap) }
	load[0] = loadAvg()
	for range 2000 {
		time.Sleep(time.Millisecond)
		idle = append(idle, one(ctxT(b)))
	}
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, tag := range []string{"EA", "EB"} {
		wg.Go(func() {
			raw, _, err := s.p.ExecuteCommand(rctx, lsp.CommandRun, map[string]any{"prompt": tag + ": search", "mode": "ask"})
			var r lsp.RunReply
			if err == nil {
				err = json.Unmarshal(raw, &r)
			}
			if err != nil || r.Status != "completed" {
				b.Errorf("task %s: %s, %v", tag, raw, err)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	s.p.Await(time.Minute, "two tasks running", func(st *lsptest.State) bool {
		n := 0
		for _, tok := range st.ProgressOrder {
			if !st.Progress[tok].Ended() {
				n++
			}
		}
		return n == 2
	})
	load[1] = loadAvg()
	for {
		select {
		case <-done:
			return idle, loaded, load
		case <-time.After(time.Millisecond):
		}
		loaded = append(loaded, one(rctx))
	}
}

// stop ends the server and returns its peak RSS in MB.
func (s *doorServer) stop(b *testing.B) float64 {
	rss := float64(procmem.Peak(b, s.p.Cmd.Process.Pid)) / (1 << 20) // MB
	_ = s.p.Shutdown(ctxT(b))
	_ = s.p.Exit(ctxT(b))
	if code, err := s.p.Wait(30 * time.Second); err != nil || code != 0 {
		b.Fatalf("exit code %d, %v", code, err)
	}
	_ = s.model.Close()
	_ = os.RemoveAll(filepath.Join(s.root, ".agentls"))
	return rss
}
