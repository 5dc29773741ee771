package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/tools/txtar"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// A scenario is a txtar archive under testdata/scenarios:
//
//	-- scenario.json --   configuration, tasks and what each must end with
//	-- model.json --      the fakemodel script answering every model call
//	-- ws/PATH --         the workspace files
//
// The suite runs every task through a real llm.Client over HTTP against a
// fakemodel server, with real tools on a real temporary workspace, and
// checks, besides each task's expectations, that every request the model
// received had a valid history (each tool call followed by its result, no
// orphan result) and kept the system prompt and the task.
type scenarioFile struct {
	Config struct {
		MaxTurns      int     `json:"maxTurns"`
		MaxTokens     int     `json:"maxTokens"`
		MaxTime       string  `json:"maxTime"`
		Validate      string  `json:"validate"`
		Check         string  `json:"check"`
		ContextWindow int     `json:"contextWindow"`
		CompactAt     float64 `json:"compactAt"`
		Rounds        int     `json:"rounds"`
		Lessons       bool    `json:"lessons"`
		Clarify       *string `json:"clarify"` // the user's answer; set enables ask_user
	} `json:"config"`
	Tasks []scenarioTask `json:"tasks"`
}

type scenarioTask struct {
	Kind        Kind          `json:"kind"`
	Prompt      string        `json:"prompt"`
	Context     EditorContext `json:"context"`
	FollowUp    bool          `json:"followUp"` // continue the previous task
	Resume      []llm.Message `json:"resume"`
	CancelOn    string        `json:"cancelOnTool"` // cancel once this tool has started...
	CancelAfter string        `json:"cancelAfter"`  // ...and this long has passed
	Expect      expectation   `json:"expect"`
}

type expectation struct {
	Status            State             `json:"status"`
	StopReason        StopReason        `json:"stopReason"`
	ModelCalls        int               `json:"modelCalls"`
	AnswerContains    []string          `json:"answerContains"`
	AnswerNotContains []string          `json:"answerNotContains"`
	PlanUpdates       *int              `json:"planUpdates"`
	Files             map[string]string `json:"files"`  // workspace path -> exact content
	Absent            []string          `json:"absent"` // workspace paths that must not exist
	Changed           []string          `json:"changed"`
	DiffContains      []string          `json:"diffContains"`
	Tools             map[string]int    `json:"tools"` // tool -> calls
	NotesContain      []string          `json:"notesContain"`
	MinCompactions    int               `json:"minCompactions"`
	// DeadProcesses are command lines (e.g. "sleep 30127") no process may
	// run after the task ended: commands run in their own PID namespace,
	// so pids they print are not the host's.
	DeadProcesses  []string    `json:"deadProcesses"`
	Clarifications *int        `json:"clarifications"`
	CachedTokens   bool        `json:"cachedTokens"` // some input tokens were cached
	Requests       []reqExpect `json:"requests"`     // requests of this task, 1-based within it
	Instructions   []string    `json:"instructions"` // the instruction files given, "(cut)" after a cut one
}

type reqExpect struct {
	N             int      `json:"n"`
	Contains      []string `json:"contains"`      // some message contains each
	NotContains   []string `json:"notContains"`   // no message contains any
	LastContains  []string `json:"lastContains"`  // the last message contains each
	NoTools       bool     `json:"noTools"`       // a validator call: no tools offered
	ToolsOffered  []string `json:"toolsOffered"`  // exactly these tools, in order
	ToolResultFor string   `json:"toolResultFor"` // a tool message answers this call id
	// SystemContains and SystemNotContains are checked on the system
	// message alone.
	SystemContains    []string `json:"systemContains"`
	SystemNotContains []string `json:"systemNotContains"`
	// ContainsOnce: the messages together hold each exactly once.
	ContainsOnce []string `json:"containsOnce"`
	// ExtendsPrevious: the request starts with every message of the
	// previous request, byte for byte (the cached prefix is unchanged).
	ExtendsPrevious bool `json:"extendsPrevious"`
}

// figureRow is one line of the per-task figures table.
type figureRow struct {
	scenario, task, status, reason string
	calls, in, out, cached         int
	model, tool, wall              time.Duration
}

var (
	figuresMu sync.Mutex
	figures   []figureRow
)

// scenarioToolSet gives each task the real tools: one registry per task,
// with the task's guarded editor, closed (its commands killed) when the
// task ends.
func scenarioToolSet(ws *workspace.Workspace) toolSet {
	return func(g *Guard) []tools.Tool {
		reg := tools.New(tools.Env{Workspace: ws, Editor: g.Editor(ws, ws.DiskEditor())})
		g.OnDone(func() { reg.Close() })
		return reg.Tools()
	}
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		t.Run(name, func(t *testing.T) { runScenario(t, name, f) })
	}
	figuresMu.Lock()
	defer figuresMu.Unlock()
	sort.Slice(figures, func(i, j int) bool { return figures[i].scenario+figures[i].task < figures[j].scenario+figures[j].task })
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-28s %-4s %-10s %-18s %5s %7s %6s %7s %9s %9s %9s\n", "scenario", "task", "status", "stop", "calls", "in", "out", "cached", "model", "tools", "wall")
	for _, r := range figures {
		fmt.Fprintf(&b, "%-28s %-4s %-10s %-18s %5d %7d %6d %7d %9s %9s %9s\n", r.scenario, r.task, r.status, r.reason, r.calls, r.in, r.out, r.cached,
			r.model.Round(time.Millisecond), r.tool.Round(time.Millisecond), r.wall.Round(time.Millisecond))
	}
	t.Log(b.String())
	if p := os.Getenv("AGENTLS_SCENARIO_TABLE"); p != "" {
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Errorf("write table: %v", err)
		}
	}
}

func runScenario(t *testing.T, name, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ar := txtar.Parse(data)
	var sc scenarioFile
	root := t.TempDir()
	for _, f := range ar.Files {
		switch {
		case f.Name == "scenario.json":
			dec := json.NewDecoder(strings.NewReader(string(f.Data)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&sc); err != nil {
				t.Fatalf("scenario.json: %v", err)
			}
		case strings.HasPrefix(f.Name, "ws/"):
			p := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(f.Name, "ws/")))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	script, err := fakemodel.ParseTxtar(data, "model.json")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test-key", Model: "fake-model",
		Retry: llm.RetryPolicy{MaxAttempts: 2, Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	cfg := Config{Root: root, ModelName: "fake-model", MaxTurns: sc.Config.MaxTurns, MaxTokens: sc.Config.MaxTokens,
		Validate: ValidateMode(sc.Config.Validate), ContextWindow: sc.Config.ContextWindow, CompactAt: sc.Config.CompactAt, Rounds: sc.Config.Rounds}
	if cfg.Validate == "" {
		cfg.Validate = ValidateOff // scenarios state when they want the validator
	}
	if sc.Config.MaxTime != "" {
		if cfg.MaxTime, err = time.ParseDuration(sc.Config.MaxTime); err != nil {
			t.Fatal(err)
		}
	}
	if sc.Config.Check != "" {
		cfg.Check = ShellCheck{Dir: root, Command: sc.Config.Check, Timeout: 20 * time.Second}
	}
	var lessons *store.Store
	if sc.Config.Lessons {
		db, err := store.Open(ctx, store.DefaultPath(root), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close(context.Background())
		lessons = db
	}
	var asked atomic.Int32
	if sc.Config.Clarify != nil {
		ans := *sc.Config.Clarify
		cfg.Clarifier = clarifierFunc(func(context.Context, string) (string, error) { asked.Add(1); return ans, nil })
	}
	runner := newRunner(lessons, cfg, client, scenarioToolSet(ws))

	seen := 0 // requests of earlier tasks
	var prevID string
	for i, st := range sc.Tasks {
		label := fmt.Sprintf("task %d", i+1)
		spec := TaskSpec{Kind: st.Kind, Prompt: st.Prompt, Context: st.Context, Resume: st.Resume}
		if st.FollowUp {
			spec.FollowUp = prevID
		}
		rec := &recorder{}
		var cancelAt atomic.Int64 // events index at cancel, +1
		var sink Sink = rec
		var cancelled time.Time
		var cancelMu sync.Mutex
		if st.CancelOn != "" {
			after, _ := time.ParseDuration(st.CancelAfter)
			var once sync.Once
			sink = SinkFunc(func(e Event) {
				rec.Event(e)
				if e.Kind == EventToolStarted && e.Tool == st.CancelOn {
					once.Do(func() {
						go func() {
							time.Sleep(after)
							cancelMu.Lock()
							cancelAt.Store(int64(len(rec.all())) + 1)
							cancelled = time.Now()
							cancelMu.Unlock()
							if task := runner.Task(e.TaskID); task != nil {
								task.Cancel()
							} else {
								t.Errorf("cancel: no task %q", e.TaskID)
							}
						}()
					})
				}
			})
		}
		start := time.Now()
		task, err := runner.Start(ctx, spec, sink)
		if err != nil {
			t.Fatalf("%s: start: %v", label, err)
		}
		res, err := task.Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		wall := time.Since(start)
		prevID = res.TaskID
		figuresMu.Lock()
		figures = append(figures, figureRow{name, strconv.Itoa(i + 1), string(res.Status), string(res.StopReason), res.ModelCalls,
			res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CachedTokens, res.ModelTime, res.ToolTime, wall})
		figuresMu.Unlock()

		reqs := srv.Requests()
		mine := reqs[seen:]
		seen = len(reqs)
		e := st.Expect
		if len(mine) != res.ModelCalls {
			t.Errorf("%s: model server got %d requests; result says %d model calls", label, len(mine), res.ModelCalls)
		}
		system := "" // the system prompt of the task's first request
		for _, r := range mine {
			if len(r.Chat.Tools) > 0 && len(r.Chat.Messages) > 0 {
				// The stable prefix: the system prompt is byte-identical
				// across the turns of a task.
				if system == "" {
					system = r.Chat.Messages[0].Content
				} else if r.Chat.Messages[0].Content != system {
					t.Errorf("%s: request %d changed the system prompt:\n%s\nwas:\n%s", label, r.N, r.Chat.Messages[0].Content, system)
				}
			}
			if p := ValidHistory(fromWire(r.Chat.Messages)); p != "" {
				t.Errorf("%s: request %d sent an invalid history: %s", label, r.N, p)
			}
			if len(r.Chat.Tools) > 0 { // a task request (the validator's has no tools)
				m := r.Chat.Messages
				if len(m) < 2 || m[0].Role != "system" || !strings.Contains(m[1].Content, st.Prompt) {
					t.Errorf("%s: request %d lost the system prompt or the task", label, r.N)
				}
			}
		}
		if e.Status != "" && res.Status != e.Status {
			t.Errorf("%s: status %s; want %s (stop %s, error %q, notes %q)", label, res.Status, e.Status, res.StopReason, res.Error, res.Notes)
		}
		if e.StopReason != "" && res.StopReason != e.StopReason {
			t.Errorf("%s: stop reason %s; want %s (error %q)", label, res.StopReason, e.StopReason, res.Error)
		}
		if e.ModelCalls != 0 && res.ModelCalls != e.ModelCalls {
			t.Errorf("%s: %d model calls; want %d", label, res.ModelCalls, e.ModelCalls)
		}
		for _, s := range e.AnswerContains {
			if !strings.Contains(res.Answer, s) {
				t.Errorf("%s: answer %q lacks %q", label, res.Answer, s)
			}
		}
		for _, s := range e.AnswerNotContains {
			if strings.Contains(res.Answer, s) {
				t.Errorf("%s: answer %q contains %q", label, res.Answer, s)
			}
		}
		if e.PlanUpdates != nil && res.PlanUpdates != *e.PlanUpdates {
			t.Errorf("%s: %d plan updates; want %d", label, res.PlanUpdates, *e.PlanUpdates)
		}
		for p, want := range e.Files {
			got, err := os.ReadFile(filepath.Join(root, p))
			if err != nil || string(got) != want {
				t.Errorf("%s: %s = %q (%v); want %q", label, p, got, err, want)
			}
		}
		for _, p := range e.Absent {
			if _, err := os.Stat(filepath.Join(root, p)); err == nil {
				t.Errorf("%s: %s exists; want absent", label, p)
			}
		}
		var changed []string
		var diffs strings.Builder
		for _, f := range res.Files {
			changed = append(changed, f.Path)
			diffs.WriteString(f.Diff)
		}
		if e.Changed != nil && strings.Join(changed, ",") != strings.Join(e.Changed, ",") {
			t.Errorf("%s: changed %v; want %v", label, changed, e.Changed)
		}
		for _, s := range e.DiffContains {
			if !strings.Contains(diffs.String(), s) {
				t.Errorf("%s: diff lacks %q:\n%s", label, s, diffs.String())
			}
		}
		for tool, n := range e.Tools {
			if res.Tools[tool].Calls != n {
				t.Errorf("%s: %s called %d times; want %d", label, tool, res.Tools[tool].Calls, n)
			}
		}
		notes := strings.Join(res.Notes, "\n")
		for _, s := range e.NotesContain {
			if !strings.Contains(notes, s) {
				t.Errorf("%s: notes lack %q:\n%s", label, s, notes)
			}
		}
		if e.MinCompactions > 0 {
			if n := strings.Count(notes, "history compacted"); n < e.MinCompactions {
				t.Errorf("%s: compacted %d times; want at least %d", label, n, e.MinCompactions)
			}
		}
		if e.Clarifications != nil && int(asked.Load()) != *e.Clarifications {
			t.Errorf("%s: user asked %d times; want %d", label, asked.Load(), *e.Clarifications)
		}
		if e.CachedTokens && res.Usage.CachedTokens == 0 {
			t.Errorf("%s: no cached input tokens; want the stable prefix cached", label)
		}
		if res.Usage.InputTokens == 0 || res.ModelTime <= 0 {
			t.Errorf("%s: figures missing: usage %+v, model time %v", label, res.Usage, res.ModelTime)
		}
		for _, cl := range e.DeadProcesses {
			assertNoProcess(t, label, cl)
		}
		if at := cancelAt.Load(); at > 0 {
			cancelMu.Lock()
			d := start.Add(wall).Sub(cancelled) // from the cancel to the end of Wait
			cancelMu.Unlock()
			if d > 2*time.Second {
				t.Errorf("%s: task ended %v after the cancel; want well under 2s", label, d)
			}
			t.Logf("%s: ended %v after the cancel", label, d.Round(time.Millisecond))
			evs := rec.all()
			for _, ev := range evs[at-1:] {
				if !(ev.Kind == EventState && ev.State == StateCancelled) && ev.Kind != EventResult {
					t.Errorf("%s: event %s (%s) published after the cancel", label, ev.Kind, ev.Tool)
				}
			}
		}
		if e.Instructions != nil {
			var got []string
			for _, f := range res.Instructions {
				name := f.Path
				if f.Cut {
					name += " (cut)"
				}
				if f.After != "" {
					name += " (after " + f.After + ")"
				}
				got = append(got, name)
			}
			if strings.Join(got, ",") != strings.Join(e.Instructions, ",") {
				t.Errorf("%s: instructions %v; want %v", label, got, e.Instructions)
			}
		}
		for _, rq := range e.Requests {
			if rq.N < 1 || rq.N > len(mine) {
				t.Errorf("%s: no request %d (got %d)", label, rq.N, len(mine))
				continue
			}
			checkRequest(t, fmt.Sprintf("%s request %d", label, rq.N), mine[rq.N-1].Chat, rq)
			if rq.ExtendsPrevious {
				if rq.N < 2 {
					t.Errorf("%s: request %d has no previous request", label, rq.N)
					continue
				}
				prev, cur := mine[rq.N-2].Chat.Messages, mine[rq.N-1].Chat.Messages
				if len(cur) <= len(prev) {
					t.Errorf("%s request %d: %d messages; want more than the previous request's %d", label, rq.N, len(cur), len(prev))
					continue
				}
				for i := range prev {
					a, _ := json.Marshal(prev[i])
					b, _ := json.Marshal(cur[i])
					if string(a) != string(b) {
						t.Errorf("%s request %d: message %d differs from the previous request's:\n%s\nwas:\n%s", label, rq.N, i, b, a)
					}
				}
			}
		}
	}
}

func checkRequest(t *testing.T, label string, c openai.ChatCompletionRequest, rq reqExpect) {
	t.Helper()
	all := ""
	for _, m := range c.Messages {
		all += m.Content + "\n"
	}
	for _, s := range rq.Contains {
		if !strings.Contains(all, s) {
			t.Errorf("%s: no message contains %q", label, s)
		}
	}
	for _, s := range rq.ContainsOnce {
		if n := strings.Count(all, s); n != 1 {
			t.Errorf("%s: the messages hold %q %d times; want once", label, s, n)
		}
	}
	for _, s := range rq.NotContains {
		if strings.Contains(all, s) {
			t.Errorf("%s: a message contains %q", label, s)
		}
	}
	for _, s := range rq.SystemContains {
		if c.Messages[0].Role != "system" || !strings.Contains(c.Messages[0].Content, s) {
			t.Errorf("%s: the system message lacks %q", label, s)
		}
	}
	for _, s := range rq.SystemNotContains {
		if strings.Contains(c.Messages[0].Content, s) {
			t.Errorf("%s: the system message contains %q", label, s)
		}
	}
	last := c.Messages[len(c.Messages)-1].Content
	for _, s := range rq.LastContains {
		if !strings.Contains(last, s) {
			t.Errorf("%s: last message %q lacks %q", label, clip(last, 300), s)
		}
	}
	if rq.NoTools && len(c.Tools) > 0 {
		t.Errorf("%s: %d tools offered; want none", label, len(c.Tools))
	}
	if rq.ToolsOffered != nil {
		var names []string
		for _, tl := range c.Tools {
			names = append(names, tl.Function.Name)
		}
		if strings.Join(names, ",") != strings.Join(rq.ToolsOffered, ",") {
			t.Errorf("%s: tools offered %v; want %v", label, names, rq.ToolsOffered)
		}
	}
	if rq.ToolResultFor != "" {
		found := false
		for _, m := range c.Messages {
			if m.Role == "tool" && m.ToolCallID == rq.ToolResultFor {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no tool result for %s", label, rq.ToolResultFor)
		}
	}
}

// fromWire converts the messages a model server received.
func fromWire(ms []openai.ChatCompletionMessage) []llm.Message {
	out := make([]llm.Message, 0, len(ms))
	for _, m := range ms {
		lm := llm.Message{Role: llm.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		out = append(out, lm)
	}
	return out
}

// assertDead waits (bounded) until the process whose pid is in file is gone
// or a zombie.
func assertNoProcess(t *testing.T, label, cmdline string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := processesRunning(cmdline)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %q still runs after the task ended (pids %v)", label, cmdline, left)
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesRunning lists the live processes whose command line (words
// joined by spaces) is cmdline.
func processesRunning(cmdline string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || strings.TrimRight(strings.ReplaceAll(string(cl), "\x00", " "), " ") != cmdline {
			continue
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}
