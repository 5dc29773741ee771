package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

func TestTransitionTable(t *testing.T) {
	all := []State{StateQueued, StatePlanning, StateExecuting, StateValidating, StateCompleted, StateFailed, StateCancelled}
	allowed := map[[2]State]bool{
		{StateQueued, StatePlanning}: true, {StateQueued, StateExecuting}: true, {StateQueued, StateFailed}: true, {StateQueued, StateCancelled}: true,
		{StatePlanning, StateExecuting}: true, {StatePlanning, StateFailed}: true, {StatePlanning, StateCancelled}: true,
		{StateExecuting, StateValidating}: true, {StateExecuting, StateFailed}: true, {StateExecuting, StateCancelled}: true,
		{StateValidating, StateExecuting}: true, {StateValidating, StateCompleted}: true, {StateValidating, StateFailed}: true, {StateValidating, StateCancelled}: true,
	}
	for _, from := range all {
		for _, to := range all {
			want := allowed[[2]State{from, to}]
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v; want %v", from, to, got, want)
			}
		}
	}
}

func TestToolCallRejectedWhenNotExecuting(t *testing.T) {
	task := &Task{id: "t1", state: StateValidating, sink: &taskSink{}, changes: &changeLog{}}
	g := &Guard{task: task}
	if err := g.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "not executing") {
		t.Fatalf("Check in validating = %v; want a not-executing error", err)
	}
	task.state = StateExecuting
	if err := g.Check(context.Background()); err != nil {
		t.Fatalf("Check in executing = %v; want nil", err)
	}
	if err := task.transition(StateCompleted); err == nil {
		t.Fatalf("executing -> completed allowed; want an illegal-transition error")
	}
}

func TestRepairHistory(t *testing.T) {
	sys := llm.Message{Role: llm.RoleSystem, Content: "s"}
	user := llm.Message{Role: llm.RoleUser, Content: "u"}
	asst := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "grep", Arguments: "{}"})
		}
		return m
	}
	res := func(id string) llm.Message { return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: "r"} }
	tests := []struct {
		name           string
		in             []llm.Message
		added, dropped int
		wantLen        int
	}{
		{"valid", []llm.Message{sys, user, asst("a"), res("a")}, 0, 0, 4},
		{"missing result", []llm.Message{sys, user, asst("a", "b"), res("a"), user}, 1, 0, 6},
		{"dangling at end", []llm.Message{sys, user, asst("a")}, 1, 0, 4},
		{"orphan", []llm.Message{sys, user, res("x"), asst("a"), res("a"), res("z")}, 0, 2, 4},
		{"duplicate result", []llm.Message{sys, user, asst("a"), res("a"), res("a")}, 0, 1, 4},
		{"empty assistant", []llm.Message{sys, user, {Role: llm.RoleAssistant}}, 0, 0, 3},
		{"incomplete call", []llm.Message{sys, user, {Role: llm.RoleAssistant, Content: "x", ToolCalls: []llm.ToolCall{{ID: "c", Name: "grep", Incomplete: true}}}}, 0, 1, 3},
		// Garbage arguments are sent as {} (ValidHistory checks it).
		{"garbage arguments", []llm.Message{sys, user, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "grep", Arguments: `{"pattern": "x"`}, {ID: "b", Name: "grep", Arguments: `"x"`}}}, res("a"), res("b")}, 0, 0, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, added, dropped := RepairHistory(tc.in)
			if added != tc.added || dropped != tc.dropped || len(out) != tc.wantLen {
				t.Fatalf("RepairHistory = %d msgs, +%d -%d; want %d msgs, +%d -%d", len(out), added, dropped, tc.wantLen, tc.added, tc.dropped)
			}
			if p := ValidHistory(out); p != "" {
				t.Fatalf("repaired history invalid: %s", p)
			}
			for _, m := range out {
				if m.Role == llm.RoleAssistant && m.Content == "" && len(m.ToolCalls) == 0 {
					t.Fatalf("empty assistant message left in history")
				}
			}
		})
	}
}

// charCounter counts a token per 4 bytes: fast and deterministic.
type charCounter struct{}

func (charCounter) Count(s string) int { return (len(s) + 3) / 4 }

func TestCompactNeverSplitsPairs(t *testing.T) {
	plan := tools.Plan{Items: []tools.PlanItem{{ID: "1", Text: "find the bug", Status: tools.PlanDone}, {ID: "2", Text: "fix it", Status: tools.PlanPending}}}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "system"}, {Role: llm.RoleUser, Content: "the task"}}
	compactions := 0
	big := strings.Repeat("x", 2000)
	for turn := 0; turn < 60; turn++ {
		n := turn%3 + 1
		a := llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("turn %d", turn)}
		for k := 0; k < n; k++ {
			a.ToolCalls = append(a.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("c%d_%d", turn, k), Name: "read_file", Arguments: `{"path":"a.go"}`})
		}
		msgs = append(msgs, a)
		for k := 0; k < n; k++ {
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: a.ToolCalls[k].ID, Name: "read_file", Content: big})
		}
		if turn%7 == 3 {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "nudge"})
		}
		c, ok := Compact(charCounter{}, msgs, nil, 2, plan, 3000)
		if ok {
			compactions++
			msgs = c
		}
		if p := ValidHistory(msgs); p != "" {
			t.Fatalf("after turn %d (%d compactions): %s", turn, compactions, p)
		}
		if msgs[0].Content != "system" || msgs[1].Content != "the task" {
			t.Fatalf("compaction lost the system prompt or the task")
		}
		if ok && (!strings.HasPrefix(msgs[2].Content, summaryMarker) || !strings.Contains(msgs[2].Content, "[ ] 2: fix it")) {
			t.Fatalf("summary missing or without the plan: %q", clip(msgs[2].Content, 300))
		}
	}
	if compactions < 3 {
		t.Fatalf("compacted %d times; want at least 3", compactions)
	}
}

func TestTiktokenCounts(t *testing.T) {
	n := DefaultTokenCounter().Count("hello world, this is a test")
	if n < 4 || n > 10 {
		t.Fatalf("Count = %d; want a real token count (4..10)", n)
	}
}

func runTask(t *testing.T, cfg Config, m Model, ts toolSet, spec TaskSpec) (*Result, *recorder) {
	t.Helper()
	return runStoredTask(t, nil, cfg, m, ts, spec)
}

// runStoredTask is runTask recorded in st.
func runStoredTask(t *testing.T, st *store.Store, cfg Config, m Model, ts toolSet, spec TaskSpec) (*Result, *recorder) {
	t.Helper()
	rec := &recorder{}
	r := newRunner(st, cfg, m, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.Run(ctx, spec, rec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, rec
}

func TestOneFactQuestionOneCall(t *testing.T) {
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("grep", `{"pattern":"func main"}`)),
		answer("`main` is in cmd/x/main.go."),
	}}
	res, _ := runTask(t, Config{}, m, staticTools(textTool("grep", true, "cmd/x/main.go:3: func main() {")), TaskSpec{Kind: KindAsk, Prompt: "where is main?"})
	if res.Status != StateCompleted || res.StopReason != StopAnswered {
		t.Fatalf("status %s/%s (%s); want completed/answered", res.Status, res.StopReason, res.Error)
	}
	if res.ModelCalls != 2 {
		t.Fatalf("ModelCalls = %d; want 2 (one tool turn plus the answer, no planning or validator call)", res.ModelCalls)
	}
}

func TestRepeatedAnswerStopsAtSecond(t *testing.T) {
	plan := `{"items":[{"id":"1","text":"x","status":"pending"}]}`
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("update_plan", plan)),
		answer("The answer is **42**."),
		answer("the answer is 42"),
		answer("never reached"),
	}}
	res, _ := runTask(t, Config{Validate: ValidateOff}, m, staticTools(planTool()), TaskSpec{Kind: KindEdit, Prompt: "p"})
	// The repeat stops the loop at once; the open plan item it left is
	// the gate it failed.
	if res.StopReason != StopPlanOpen || res.ModelCalls != 3 {
		t.Fatalf("stop %s after %d calls; want plan_open after 3", res.StopReason, res.ModelCalls)
	}
	if res.Status != StateFailed || !strings.Contains(res.Error, "repeated its answer") {
		t.Fatalf("status %s (%s) with an open plan item; want failed because the model repeated itself", res.Status, res.Error)
	}
}

func TestLastPlanItemAtTurnLimitCompletes(t *testing.T) {
	open := `{"items":[{"id":"1","text":"a","status":"done"},{"id":"2","text":"b","status":"pending"}]}`
	done := `{"items":[{"id":"1","text":"a","status":"done"},{"id":"2","text":"b","status":"skipped","reason":"already satisfied"}]}`
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("update_plan", open), call("grep", `{"pattern":"b"}`)),
		calls("Item b is already satisfied; all done.", call("update_plan", done)),
	}}
	res, _ := runTask(t, Config{MaxTurns: 2, Validate: ValidateOff}, m, staticTools(planTool(), textTool("grep", true, "b.go:1: b")), TaskSpec{Kind: KindEdit, Prompt: "do a and b"})
	if res.Status != StateCompleted || res.StopReason != StopAnswered {
		t.Fatalf("status %s/%s (%s); want completed/answered", res.Status, res.StopReason, res.Error)
	}
	if res.PlanUpdates != 2 || res.Plan.Items[1].Status != tools.PlanSkipped {
		t.Fatalf("PlanUpdates = %d, item 2 %s; want 2 updates, item skipped", res.PlanUpdates, res.Plan.Items[1].Status)
	}
}

func TestInjectedMessageGetsOneMoreTurn(t *testing.T) {
	open := `{"items":[{"id":"1","text":"a","status":"pending"}]}`
	done := `{"items":[{"id":"1","text":"a","status":"done"}]}`
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("update_plan", open)),
		answer("done"), // gate: plan open -> nudge at the turn limit
		calls("Now done.", call("update_plan", done)),
	}}
	res, _ := runTask(t, Config{MaxTurns: 2, Validate: ValidateOff}, m, staticTools(planTool()), TaskSpec{Kind: KindEdit, Prompt: "p"})
	if res.Status != StateCompleted || res.ModelCalls != 3 {
		t.Fatalf("status %s/%s after %d calls; want completed after 3 (the nudge gets its turn)", res.Status, res.StopReason, res.ModelCalls)
	}
}

func TestOpenPlanBlocksCompletion(t *testing.T) {
	open := `{"items":[{"id":"1","text":"a","status":"in_progress"}]}`
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("update_plan", open)),
		answer("finished"),
		answer("finished, really"),
		answer("finished, truly"),
	}}
	res, _ := runTask(t, Config{Validate: ValidateOff, Rounds: 2}, m, staticTools(planTool()), TaskSpec{Kind: KindEdit, Prompt: "p"})
	if res.Status != StateFailed || res.StopReason != StopPlanOpen {
		t.Fatalf("status %s/%s; want failed/plan_open", res.Status, res.StopReason)
	}
	if !strings.Contains(res.Notes[0], "already satisfied") {
		t.Fatalf("nudge %q does not offer the skipped/already satisfied close", res.Notes[0])
	}
}

func TestWritesInOrderReadsInParallel(t *testing.T) {
	var mu sync.Mutex
	var order []string
	var inflight, peak atomic.Int32
	slowRead := &fakeTool{name: "read_file", ro: true, run: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		inflight.Add(-1)
		return tools.Result{Text: "content " + string(args)}, nil
	}}
	write := &fakeTool{name: "write_file", run: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		mu.Lock()
		order = append(order, string(args))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		return tools.Result{Text: "wrote"}, nil
	}}
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("read_file", `{"p":1}`), call("read_file", `{"p":2}`), call("read_file", `{"p":3}`)),
		calls("", call("write_file", `{"n":1}`), call("write_file", `{"n":2}`), call("write_file", `{"n":3}`)),
		answer("done"),
	}}
	res, _ := runTask(t, Config{Validate: ValidateOff}, m, staticTools(slowRead, write), TaskSpec{Kind: KindEdit, Prompt: "p"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	if peak.Load() < 2 {
		t.Errorf("read-only calls peaked at %d in flight; want parallel", peak.Load())
	}
	if got := strings.Join(order, ","); got != `{"n":1},{"n":2},{"n":3}` {
		t.Errorf("writes ran in order %s; want 1,2,3", got)
	}
	// Results come back in call order, each after its call.
	h := m.requests()[2].Messages
	if p := ValidHistory(h); p != "" {
		t.Fatal(p)
	}
}

func TestOneClarificationRound(t *testing.T) {
	var asked atomic.Int32
	cl := clarifierFunc(func(ctx context.Context, q string) (string, error) {
		asked.Add(1)
		return "", nil
	})
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("ask_user", `{"question":"which file?"}`)),
		calls("", call("ask_user", `{"question":"really, which file?"}`)),
		answer("I used my best interpretation."),
	}}
	res, _ := runTask(t, Config{Clarifier: cl}, m, staticTools(), TaskSpec{Kind: KindAsk, Prompt: "p"})
	if asked.Load() != 1 {
		t.Fatalf("user asked %d times; want 1", asked.Load())
	}
	h := m.requests()[2].Messages
	if !strings.Contains(h[len(h)-1].Content, "proceed with your best interpretation") || !strings.Contains(h[len(h)-3].Content, "no answer") {
		t.Fatalf("clarification results = %q / %q", h[len(h)-3].Content, h[len(h)-1].Content)
	}
	if res.Status != StateCompleted {
		t.Fatalf("status %s", res.Status)
	}
}

type clarifierFunc func(ctx context.Context, q string) (string, error)

func (f clarifierFunc) Clarify(ctx context.Context, q string) (string, error) { return f(ctx, q) }

func TestFollowUpSeesPreviousTask(t *testing.T) {
	m := &scriptModel{resps: []*llm.Response{answer("There are 12 lines."), answer("With wc -l: 13 lines.")}}
	r := newRunner(nil, Config{}, m, staticTools())
	ctx := context.Background()
	first, err := r.Run(ctx, TaskSpec{Kind: KindAsk, Prompt: "how many lines in a.txt?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, TaskSpec{Kind: KindAsk, Prompt: "wrong, use wc -l", FollowUp: first.TaskID}, nil); err != nil {
		t.Fatal(err)
	}
	msg := m.requests()[1].Messages[1].Content
	for _, want := range []string{"how many lines in a.txt?", "There are 12 lines.", "wrong, use wc -l"} {
		if !strings.Contains(msg, want) {
			t.Errorf("follow-up task message lacks %q:\n%s", want, msg)
		}
	}
	if _, err := r.Start(ctx, TaskSpec{Prompt: "x", FollowUp: "nope"}, nil); err == nil {
		t.Errorf("follow-up of an unknown task started; want an error")
	}
}

func TestLengthCutNotExecuted(t *testing.T) {
	var ran atomic.Int32
	w := &fakeTool{name: "write_file", run: func(context.Context, json.RawMessage) (tools.Result, error) {
		ran.Add(1)
		return tools.Result{Text: "wrote"}, nil
	}}
	cut := calls("partial", call("write_file", `{"path":"a","content":"tru`))
	cut.FinishReason = llm.FinishLength
	cut.Message.ToolCalls[0].Incomplete = true
	m := &scriptModel{resps: []*llm.Response{cut, answer("ok, smaller")}}
	res, _ := runTask(t, Config{Validate: ValidateOff}, m, staticTools(w), TaskSpec{Kind: KindEdit, Prompt: "p"})
	if ran.Load() != 0 {
		t.Fatalf("a tool of a cut response ran")
	}
	if res.ModelCalls != 2 {
		t.Fatalf("ModelCalls = %d; want 2 (the cut counts as a turn)", res.ModelCalls)
	}
	h := m.requests()[1].Messages
	last := h[len(h)-1]
	if last.Role != llm.RoleUser || !strings.Contains(last.Content, "cut") {
		t.Fatalf("last message to the model = %+v; want the cut notice", last)
	}
	for _, msg := range h {
		if msg.Content == "partial" {
			t.Fatalf("the cut response was kept in history")
		}
	}
}

func TestLoopDetectedAfterOneWarning(t *testing.T) {
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("grep", `{"pattern":"x"}`)),
		calls("", call("grep", `{ "pattern": "x" }`)),
		calls("", call("grep", `{"pattern":"x"}`)),
		answer("never"),
	}}
	res, _ := runTask(t, Config{}, m, staticTools(textTool("grep", true, "no match")), TaskSpec{Kind: KindAsk, Prompt: "p"})
	if res.StopReason != StopLoopDetected || res.ModelCalls != 3 {
		t.Fatalf("stop %s after %d calls; want loop_detected after 3", res.StopReason, res.ModelCalls)
	}
	if len(res.Notes) != 1 {
		t.Fatalf("notes %q; want one warning", res.Notes)
	}
}

func TestAskTaskRefusesShellAndNamesListFiles(t *testing.T) {
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("run_command", `{"command":"find . -maxdepth 1 -name '*.go'"}`)),
		answer("There are no Go files."),
		calls("", call("list_files", `{"pattern":"**/*.go"}`)),
		answer("a/x.go and b/y.go"),
	}}
	res, _ := runTask(t, Config{Root: "/ws"}, m, staticTools(textTool("run_command", false, "(nothing)"), textTool("list_files", true, "a/x.go\nb/y.go")), TaskSpec{Kind: KindAsk, Prompt: "list the go files"})
	if res.Status != StateCompleted || res.Answer != "a/x.go and b/y.go" {
		t.Fatalf("result %s %q; want completed with the list", res.Status, res.Answer)
	}
	h := m.requests()[1].Messages
	if !strings.Contains(h[len(h)-1].Content, "list_files") {
		t.Fatalf("refusal %q does not name list_files", h[len(h)-1].Content)
	}
	if !strings.Contains(h[0].Content, "workspace root is /ws") {
		t.Fatalf("system prompt lacks the root")
	}
	_ = res
}

func TestValidatorGetsEvidence(t *testing.T) {
	w := &fakeTool{name: "run_command", run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "ok", Evidence: "$ go test ./...\nok  \tpkg\t0.1s"}, nil
	}}
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("run_command", `{"command":"go test ./..."}`)),
		answer("Tests pass."),
		answer("FAIL: the test output shows only one package"),
		answer("Tests pass in every package."),
		answer("PASS"),
	}}
	res, _ := runTask(t, Config{Validate: ValidateEdits}, m, staticTools(w), TaskSpec{Kind: KindEdit, Prompt: "run the tests"})
	if res.Status != StateCompleted || res.ModelCalls != 5 {
		t.Fatalf("status %s/%s after %d calls; want completed after 5", res.Status, res.StopReason, res.ModelCalls)
	}
	vreq := m.requests()[2]
	if len(vreq.Tools) != 0 || !strings.Contains(vreq.Messages[1].Content, "ok  \tpkg\t0.1s") {
		t.Fatalf("validator request lacks the real output tail:\n%s", vreq.Messages[1].Content)
	}
	fix := m.requests()[3].Messages
	if !strings.Contains(fix[len(fix)-1].Content, "only one package") {
		t.Fatalf("validator's reason not fed back: %q", fix[len(fix)-1].Content)
	}
}

func TestEvidenceGap(t *testing.T) {
	tests := []struct {
		answer string
		calls  []callRecord
		gap    bool
	}{
		{"There are no Go files.", nil, true},
		{"There are no Go files.", []callRecord{{Tool: "run_command", Args: `{"command":"find ."}`}}, true},
		{"There are no Go files.", []callRecord{{Tool: "list_files", Args: `{"pattern":"**/*.go"}`}}, false},
		{"No matches found.", []callRecord{{Tool: "grep", Args: `{"pattern":"x","path":"vendor"}`}}, true},
		{"No matches found.", []callRecord{{Tool: "grep", Args: `{"pattern":"x"}`, IsError: true}}, true},
		{"There are 3 Go files.", nil, false},
		// A#1: the dot of ".go" does not hide the claim.
		{"No .go files found.", []callRecord{{Tool: "run_command", Args: `{"command":"find . -maxdepth 1 -name '*.go'"}`}}, true},
		// A scope must be a path the task names, not any substring of it.
		{"No matches found.", []callRecord{{Tool: "grep", Args: `{"pattern":"x","path":"i"}`}}, true},
		// The tools' aliases of path are read too.
		{"No matches found.", []callRecord{{Tool: "grep", Args: `{"pattern":"x","folder":"vendor"}`}}, true},
		// What the tool reports it searched wins over the arguments.
		{"No matches found.", []callRecord{{Tool: "grep", Args: `{"pattern":"x"}`, Scope: "vendor", HasScope: true}}, true},
		{"No matches found.", []callRecord{{Tool: "grep", Args: `{"pattern":"x","path":"."}`, HasScope: true}}, false},
		// A search stopped by its cap is no evidence of absence.
		{"No matches found.", []callRecord{{Tool: "grep", Args: `{"pattern":"x"}`, HasScope: true, Partial: true}}, true},
	}
	for _, tc := range tests {
		if got := evidenceGap(tc.answer, TaskSpec{Prompt: "find go files"}, tc.calls) != ""; got != tc.gap {
			t.Errorf("evidenceGap(%q, %v) = %v; want %v", tc.answer, tc.calls, got, tc.gap)
		}
	}
	scoped := []struct {
		spec  TaskSpec
		calls []callRecord
		gap   bool
	}{
		// The task names the folder: a search there is the right scope.
		{TaskSpec{Prompt: "any TODO in internal/api?"}, []callRecord{{Tool: "grep", HasScope: true, Scope: "internal/api"}}, false},
		{TaskSpec{Prompt: "any TODO in internal/api?"}, []callRecord{{Tool: "grep", HasScope: true, Scope: "internal"}}, true},
		// The current file (or its folder) is a scope the task names.
		{TaskSpec{Prompt: "is Foo used in this file?", Context: EditorContext{File: "pkg/a.go"}}, []callRecord{{Tool: "grep", HasScope: true, Scope: "pkg/a.go"}}, false},
		// A question about the selection is answered from the selection...
		{TaskSpec{Prompt: "is Foo used here?", Context: EditorContext{File: "a.go", Selection: "func Bar() {}"}}, nil, false},
		// ...unless it asks beyond it.
		{TaskSpec{Prompt: "is Foo used anywhere in the project?", Context: EditorContext{File: "a.go", Selection: "func Foo() {}"}}, nil, true},
	}
	for _, tc := range scoped {
		if got := evidenceGap("Foo is not used.", tc.spec, tc.calls) != ""; got != tc.gap {
			t.Errorf("evidenceGap(%+v, %v) = %v; want %v", tc.spec, tc.calls, got, tc.gap)
		}
	}
}

func TestCancelStopsToolAndPublishesNothingAfter(t *testing.T) {
	started := make(chan struct{})
	var edits atomic.Int32
	var guard *Guard
	slow := &fakeTool{name: "run_command", run: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		close(started)
		<-ctx.Done()
		// a late edit attempt from the cancelled work must be refused
		if guard.Check(ctx) == nil {
			edits.Add(1)
		}
		return tools.Result{}, ctx.Err()
	}}
	m := &scriptModel{resps: []*llm.Response{calls("working", call("run_command", `{"command":"sleep 100"}`)), answer("never")}}
	rec := &recorder{}
	r := newRunner(nil, Config{}, m, func(g *Guard) []tools.Tool { guard = g; return []tools.Tool{slow} })
	task, err := r.Start(context.Background(), TaskSpec{Kind: KindEdit, Prompt: "p"}, rec)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	at := time.Now()
	r.Task(task.ID()).Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(at); d > time.Second {
		t.Errorf("cancel took %v", d)
	}
	if res.Status != StateCancelled || res.StopReason != StopCancelled || edits.Load() != 0 {
		t.Fatalf("status %s/%s, %d late edits; want cancelled and none", res.Status, res.StopReason, edits.Load())
	}
	evs := rec.all()
	var after []EventKind
	seen := false
	for _, e := range evs {
		if seen {
			after = append(after, e.Kind)
		}
		if e.Kind == EventToolStarted {
			seen = true
		}
	}
	want := []EventKind{EventState, EventResult}
	if fmt.Sprint(after) != fmt.Sprint(want) {
		t.Fatalf("events after the cancel = %v; want only %v", after, want)
	}
}

func TestResultFigures(t *testing.T) {
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("grep", `{"pattern":"a"}`), call("grep", `{"pattern":"b"}`)),
		answer("done"),
	}}
	res, rec := runTask(t, Config{}, m, staticTools(textTool("grep", true, "x")), TaskSpec{Kind: KindAsk, Prompt: "p"})
	if res.Usage.InputTokens != 200 || res.Usage.OutputTokens != 20 || res.Tools["grep"].Calls != 2 || res.ModelTime <= 0 {
		t.Fatalf("figures %+v tools %+v; want 200/20 tokens, 2 grep calls, model time", res.Usage, res.Tools)
	}
	usage := 0
	for _, e := range rec.all() {
		if e.Kind == EventUsage {
			usage++
		}
		if e.Kind == EventToolFinished && e.Tool != "grep" {
			t.Fatalf("tool event names %q; want the tool name", e.Tool)
		}
	}
	if usage != 2 {
		t.Fatalf("%d usage events; want 2", usage)
	}
}

func TestNormalizeAnswer(t *testing.T) {
	tests := []struct{ a, b string }{
		{"The answer is **42**.", "the answer is 42"},
		{"a\n\n b", "A B"},
	}
	for _, tc := range tests {
		if normalizeAnswer(tc.a) != normalizeAnswer(tc.b) {
			t.Errorf("normalizeAnswer(%q) != normalizeAnswer(%q)", tc.a, tc.b)
		}
	}
	if normalizeAnswer("42 files") == normalizeAnswer("43 files") {
		t.Errorf("different answers normalized equal")
	}
}

func TestBudgets(t *testing.T) {
	loop := func(n int) []*llm.Response {
		var rs []*llm.Response
		for i := 0; i < n; i++ {
			rs = append(rs, calls("", call("grep", fmt.Sprintf(`{"pattern":"p%d"}`, i))))
		}
		return rs
	}
	tests := []struct {
		name   string
		cfg    Config
		resps  []*llm.Response
		reason StopReason
		calls  int
	}{
		{"turns", Config{MaxTurns: 3}, loop(10), StopTurnBudget, 3},
		{"tokens", Config{MaxTokens: 250}, loop(10), StopTokenBudget, 3},          // 110 tokens a call
		{"time", Config{MaxTime: 100 * time.Millisecond}, nil, StopTimeBudget, 1}, // the model never answers
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &scriptModel{resps: tc.resps}
			res, _ := runTask(t, tc.cfg, m, staticTools(textTool("grep", true, "x")), TaskSpec{Kind: KindAsk, Prompt: "p"})
			if res.Status != StateFailed || res.StopReason != tc.reason || res.ModelCalls != tc.calls {
				t.Fatalf("%s/%s after %d calls; want failed/%s after %d", res.Status, res.StopReason, res.ModelCalls, tc.reason, tc.calls)
			}
		})
	}
}

// breaksTheBuild is an edit_file tool that breaks a.go, for the tools of
// runTask, and a check command that fails on the result: a task that
// edits with it never passes its check.
func breaksTheBuild(t *testing.T) (toolsOf func(*Guard) []tools.Tool, check ShellCheck) {
	var guard *Guard
	edit := &fakeTool{name: "edit_file", run: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		guard.RecordChange("a.go", "package a\n", "package a\nfunc broken(\n")
		return tools.Result{Text: "edited a.go", Changed: []string{"a.go"}}, nil
	}}
	return func(g *Guard) []tools.Tool { guard = g; return []tools.Tool{edit} },
		ShellCheck{Dir: t.TempDir(), Command: "echo 'a.go:2: syntax error' >&2; exit 2"}
}

func TestCheckCommandFeedsBackThenFails(t *testing.T) {
	toolsOf, check := breaksTheBuild(t)
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("edit_file", `{}`)),
		answer("Done."), answer("Fixed."), answer("Really fixed."),
	}}
	cfg := Config{Validate: ValidateOff, CheckRounds: 2, Check: check}
	res, _ := runTask(t, cfg, m, toolsOf, TaskSpec{Kind: KindEdit, Prompt: "p"})
	if res.Status != StateFailed || res.StopReason != StopCheckFailed || res.ModelCalls != 4 {
		t.Fatalf("%s/%s after %d calls; want failed/check_failed after 4", res.Status, res.StopReason, res.ModelCalls)
	}
	h := m.requests()[2].Messages
	if last := h[len(h)-1].Content; !strings.Contains(last, "a.go:2: syntax error") || !strings.Contains(last, "exit 2") {
		t.Fatalf("check output not fed back: %q", last)
	}
	if len(res.Files) != 1 || !strings.Contains(res.Files[0].Diff, "+func broken(") {
		t.Fatalf("files %+v; want a.go with its diff", res.Files)
	}
	rep := res.Report()
	for _, want := range []string{"**failed** (check_failed)", "| 4 |", "```diff", "| edit_file | 1 | 0 |"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
}

// TestRereadAfterCompactionIsNoLoop: compaction replaced the results
// the model had, so reading the same files again is not a loop; before,
// the second re-read after a compaction stopped the task as loop_detected.
func TestRereadAfterCompactionIsNoLoop(t *testing.T) {
	big := strings.Repeat("line of code\n", 150) // ~500 tokens with charCounter
	read := &fakeTool{name: "read_file", ro: true, run: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: string(args) + "\n" + big}, nil
	}}
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("read_file", `{"path":"a.go"}`)),
		calls("", call("read_file", `{"path":"b.go"}`)),
		calls("", call("read_file", `{"path":"c.go"}`)),
		calls("", call("read_file", `{"path":"a.go"}`)),
		calls("", call("read_file", `{"path":"b.go"}`)),
		answer("a.go, b.go and c.go each hold lines of code."),
	}}
	res, _ := runTask(t, Config{ContextWindow: 1500, Counter: charCounter{}}, m, staticTools(read), TaskSpec{Kind: KindAsk, Prompt: "what is in a.go, b.go and c.go?"})
	if !strings.Contains(strings.Join(res.Notes, "\n"), "history compacted") {
		t.Fatalf("no compaction happened (notes %q); the test needs one", res.Notes)
	}
	if res.Status != StateCompleted || res.StopReason != StopAnswered {
		t.Fatalf("status %s/%s (%s, notes %q); want completed/answered", res.Status, res.StopReason, res.Error, res.Notes)
	}
}
