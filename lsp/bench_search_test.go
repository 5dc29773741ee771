package lsp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/benchstat"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace/benchcorpus"
)

// searchGreps are the grep calls each searching task makes in turn: a wide
// literal, a wide regex and a selective literal, as in BenchmarkGrep of
// ./tools. %d is the output limit, 1000 plus the round: the agent ends a
// task that repeats a call with the same result, and no pattern here has
// 1000 matching lines, so every round searches the same files.
var searchGreps = []string{
	`{"pattern":"utf8.RuneError","literal":true,"limit":%d}`,
	`{"pattern":"func \\w+Reader\\(","limit":%d}`,
	`{"pattern":"hashMightPanic","limit":%d}`,
}

// searchRounds is how many times each task runs every grep of searchGreps.
const searchRounds = 20

// searchTaskTurns scripts one task told apart by tag in its prompt: a grep
// per turn, the greps of searchGreps in turn searchRounds times, then a
// final answer.
func searchTaskTurns(tag string) []fakemodel.Turn {
	var turns []fakemodel.Turn
	for i := range searchRounds * len(searchGreps) {
		turns = append(turns, fakemodel.Turn{
			Match:     &fakemodel.Match{AnyMessage: tag},
			ToolCalls: []fakemodel.ToolCall{call(fmt.Sprintf("%s-%d", tag, i), "grep", fmt.Sprintf(searchGreps[i%len(searchGreps)], 1000+i/len(searchGreps)))},
		})
	}
	return append(turns, fakemodel.Turn{Match: &fakemodel.Match{AnyMessage: tag}, Text: tag + " searched.", FinishReason: "stop"})
}

// BenchmarkCodeActionWhileTwoTasksSearch measures how long the editor waits
// for an answer while the agent searches: the real server over pipes, with
// its workspace on a 53,000-file copy of GOROOT/src, runs two agentls.run
// tasks at once, each making 60 grep calls (searchGreps, 20 rounds) before
// its answer. Meanwhile the fake editor sends textDocument/codeAction on an
// open file and agentls.tasks in turn, one request at a time with 1 ms
// between them, from the moment both tasks have begun their progress to
// the end of both.
// It reports the percentiles of those requests' latencies in ms (goal:
// p99 < 5 ms on 2 cores). Each op is a new server on the same corpus, so
// the first grep of each op pays the walk and the filter build.
func BenchmarkCodeActionWhileTwoTasksSearch(b *testing.B) {
	start := time.Now()
	root, built, err := benchcorpus.GoSource(53000)
	if err != nil {
		b.Fatal(err)
	}
	if built {
		b.Logf("built the 53,000-file corpus in %s in %v", root, time.Since(start).Round(time.Second))
	}
	// The tasks write their reports under ROOT/.agentls: remove it after,
	// unless it was there before, so the cached corpus stays as built.
	if _, err := os.Stat(filepath.Join(root, ".agentls")); os.IsNotExist(err) {
		b.Cleanup(func() { _ = os.RemoveAll(filepath.Join(root, ".agentls")) })
	}
	open := filepath.Join(root, "copy0", "bufio", "bufio.go")
	text, err := os.ReadFile(open)
	if err != nil {
		b.Fatalf("corpus %s: %v", root, err)
	}
	defer tools.ReserveProtocolProc()() // as agentls serve runs
	b.Logf("corpus %s; %d CPUs, GOMAXPROCS %d", root, runtime.NumCPU(), runtime.GOMAXPROCS(0))

	var all, actions, lists []time.Duration
	var greps int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		turns := append(searchTaskTurns("TASK-A"), searchTaskTurns("TASK-B")...)
		model, err := fakemodel.Start(fakemodel.Script{Turns: turns})
		if err != nil {
			b.Fatal(err)
		}
		cfg := lsptest.Config{WorkDoneProgress: true, ApplyEdit: true, CodeActionLiterals: true, Roots: []string{root},
			InitializationOptions: map[string]any{"maxTurns": searchRounds*len(searchGreps) + 5}}
		env := func(k string) string {
			if k == "OPENAI_API_KEY" {
				return testAPIKey
			}
			return ""
		}
		// The model's address is the user's own setting, as a user's is.
		user := lsptest.UserSettingsDir(b, map[string]any{"baseURL": model.URL(), "model": "test-model", "validate": "off", "approval": "auto"})
		svc := lsp.NewService(lsp.ServiceOptions{Getenv: env, UserDir: user})
		// Warnings only: a debug line per request would be part of the load.
		quiet := slog.NewTextHandler(lsptest.LogWriter(b), &slog.HandlerOptions{Level: slog.LevelWarn})
		s := newSession(b, cfg, append(svc.Options(), server.WithLogger(quiet, nil))...)
		b.StartTimer()

		if _, err := s.c.Initialize(ctx(b)); err != nil {
			b.Fatalf("initialize: %v", err)
		}
		if err := s.c.OpenDocument(ctx(b), open, "go", string(text)); err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		var wg sync.WaitGroup
		replies := make([]lsp.RunReply, 2)
		errs := make([]error, 2)
		for i, p := range []string{"TASK-A: find the rune errors", "TASK-B: find the readers"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, _, err := s.c.ExecuteCommand(rctx, lsp.CommandRun, map[string]any{"prompt": p, "mode": "ask"})
				if err == nil {
					err = json.Unmarshal(raw, &replies[i])
				}
				errs[i] = err
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		s.c.Await(time.Minute, "two tasks running", func(st *lsptest.State) bool { return len(st.ProgressOrder) == 2 })

		ap := lsptest.QuickFixProbe(open)
	loop:
		for i := 0; ; i++ {
			select {
			case <-done:
				break loop
			case <-time.After(time.Millisecond):
			}
			if i%2 == 0 {
				d := s.c.TimeCodeAction(rctx, ap)
				actions, all = append(actions, d), append(all, d)
			} else {
				t0 := time.Now()
				if _, _, err := s.c.ExecuteCommand(rctx, lsp.CommandTasks, nil); err != nil {
					b.Fatalf("%s: %v", lsp.CommandTasks, err)
				}
				d := time.Since(t0)
				lists, all = append(lists, d), append(all, d)
			}
		}
		cancel()
		for i, r := range replies {
			if errs[i] != nil || r.Status != "completed" {
				b.Fatalf("task %d: %+v, %v", i, r, errs[i])
			}
		}
		for _, req := range model.Requests() {
			if m := req.Chat.Messages; len(m) > 0 && m[len(m)-1].Role == "tool" && strings.Contains(m[len(m)-1].Content, ".go:") {
				greps++
			}
		}
		b.StopTimer()
		_ = model.Close()
		b.StartTimer()
	}
	b.StopTimer()
	if want := b.N * 2 * searchRounds * len(searchGreps); greps < want {
		b.Errorf("%d grep results reached the model; want %d", greps, want)
	}
	ms, pct := benchstat.Millis, benchstat.Percentile[time.Duration]
	b.Logf("%d requests (%d code actions, %d agentls.tasks); code action p99 %.2f ms, agentls.tasks p99 %.2f ms",
		len(all), len(actions), len(lists), ms(pct(actions, 99)), ms(pct(lists, 99)))
	b.ReportMetric(ms(pct(all, 50)), "p50-ms")
	b.ReportMetric(ms(pct(all, 90)), "p90-ms")
	b.ReportMetric(ms(pct(all, 99)), "p99-ms")
	b.ReportMetric(ms(pct(all, 100)), "max-ms")
	b.ReportMetric(float64(len(all))/float64(b.N), "requests/op")
}
