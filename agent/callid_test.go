package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

type approverFunc func(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error)

func (f approverFunc) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	return f(ctx, req)
}

// TestToolCallIdentity follows the model's call ids through the loop: a
// call's start and finish events carry its id and raw arguments, parallel
// calls keep theirs apart (each tool sees its own id in its context), and
// an approval request a tool makes (without naming its call) reaches the
// approver with the id, arguments and effects of the call that asked.
func TestToolCallIdentity(t *testing.T) {
	var both sync.WaitGroup
	both.Add(2)
	look := &fakeTool{name: "look", ro: true, run: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		both.Done()
		both.Wait() // both reads are in flight at once
		c, _ := tools.CallFrom(ctx)
		return tools.Result{Text: "seen by " + c.ID + " " + string(c.Args)}, nil
	}}
	var mu sync.Mutex
	var asked []tools.ApprovalRequest
	user := approverFunc(func(_ context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return tools.AllowOnce, nil
	})
	ts := func(g *Guard) []tools.Tool {
		ap := g.Approver(user)
		change := &fakeTool{name: "change", run: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
			// A tool from another source asks with its name only.
			if _, err := ap.Approve(ctx, tools.ApprovalRequest{Tool: "change", Summary: "change a thing"}); err != nil {
				return tools.Result{}, err
			}
			return tools.Result{Text: "changed"}, nil
		}}
		return []tools.Tool{look, change}
	}
	a := llm.ToolCall{ID: "call_look_a", Name: "look", Arguments: `{"p":"a"}`}
	b := llm.ToolCall{ID: "call_look_b", Name: "look", Arguments: `{"p":"b"}`}
	w := llm.ToolCall{ID: "call_change", Name: "change", Arguments: `{"what":"x"}`}
	m := &scriptModel{resps: []*llm.Response{calls("", a, b), calls("", w), answer("done")}}
	done := make(chan struct{})
	var res *Result
	var rec *recorder
	go func() {
		defer close(done)
		res, rec = runTask(t, Config{Validate: ValidateOff}, m, ts, TaskSpec{Kind: KindEdit, Prompt: "p"})
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the two read-only calls did not run in parallel")
	}
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}

	type seen struct{ started, finished int }
	byID := map[string]*seen{}
	for _, e := range rec.all() {
		if e.Kind != EventToolStarted && e.Kind != EventToolFinished {
			continue
		}
		want := map[string]llm.ToolCall{a.ID: a, b.ID: b, w.ID: w}[e.CallID]
		if want.ID == "" {
			t.Fatalf("%s event of %s has call id %q; want one of the model's", e.Kind, e.Tool, e.CallID)
		}
		if e.Tool != want.Name || string(e.RawArgs) != want.Arguments {
			t.Errorf("%s %s: tool %s args %s; want %s %s", e.Kind, e.CallID, e.Tool, e.RawArgs, want.Name, want.Arguments)
		}
		s := byID[e.CallID]
		if s == nil {
			s = &seen{}
			byID[e.CallID] = s
		}
		if e.Kind == EventToolStarted {
			s.started++
			continue
		}
		s.finished++
		if s.started != 1 {
			t.Errorf("%s finished before it started", e.CallID)
		}
		if e.Call == nil || e.Call.CallID != e.CallID {
			t.Fatalf("finish of %s carries result %+v; want its call id", e.CallID, e.Call)
		}
		if want.Name == "look" {
			if w := "seen by " + want.ID + " " + want.Arguments; e.Call.Text != w {
				t.Errorf("result of %s = %q; want %q (the tool saw another call's identity)", e.CallID, e.Call.Text, w)
			}
		}
	}
	for _, id := range []string{a.ID, b.ID, w.ID} {
		if s := byID[id]; s == nil || s.started != 1 || s.finished != 1 {
			t.Errorf("call %s: events %+v; want one start and one finish", id, s)
		}
	}
	if len(asked) != 1 {
		t.Fatalf("approver asked %d times; want 1", len(asked))
	}
	if q := asked[0]; q.CallID != w.ID || string(q.Args) != w.Arguments || q.Effects != tools.WritesFiles {
		t.Errorf("approval request carries call %q args %s effects %v; want %q %s %v", q.CallID, q.Args, q.Effects, w.ID, w.Arguments, tools.WritesFiles)
	}
}

// TestEveryCallHasItsOwnID: calls the model sent without an id, and a
// call reusing an earlier call's id, each get an id of their own; their
// start and finish events pair by it, carry the tool's presentation, and
// the history gives the model each result under the id of its call.
func TestEveryCallHasItsOwnID(t *testing.T) {
	look := textTool("look", true, "seen")
	first := []llm.ToolCall{{Name: "look", Arguments: `{"path":"a.go"}`}, {Name: "look", Arguments: `{"path":"b.go"}`}, {ID: "dup", Name: "look", Arguments: `{}`}}
	again := llm.ToolCall{ID: "dup", Name: "look", Arguments: `{"path":"c.go"}`}
	m := &scriptModel{resps: []*llm.Response{calls("", first...), calls("", again), answer("done")}}
	res, rec := runTask(t, Config{Validate: ValidateOff}, m, staticTools(look), TaskSpec{Kind: KindAsk, Prompt: "p"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	started := map[string]int{}
	finished := map[string]int{}
	for _, e := range rec.all() {
		switch e.Kind {
		case EventToolStarted:
			started[e.CallID]++
			if e.Present == nil || e.Present.Title == "" {
				t.Errorf("start of %s carries no presentation: %+v", e.CallID, e.Present)
			}
		case EventToolFinished:
			finished[e.CallID]++
			if e.Present == nil || e.Call == nil || e.Call.Present != e.Present {
				t.Errorf("finish of %s: presentation %+v, result %+v; want the result's own", e.CallID, e.Present, e.Call)
			}
		}
	}
	if len(started) != 4 || started[""] != 0 {
		t.Fatalf("call ids started %v; want 4 distinct, none empty", started)
	}
	for id, n := range started {
		if n != 1 || finished[id] != 1 {
			t.Errorf("call %s started %d and finished %d times; want once each", id, n, finished[id])
		}
	}
	// The last request's history answers each call under its id.
	m.mu.Lock()
	last := m.reqs[len(m.reqs)-1]
	m.mu.Unlock()
	asked, answered := map[string]bool{}, map[string]bool{}
	for _, msg := range last.Messages {
		for _, c := range msg.ToolCalls {
			asked[c.ID] = true
		}
		if msg.Role == llm.RoleTool {
			answered[msg.ToolCallID] = true
		}
	}
	for id := range started {
		if !asked[id] || !answered[id] {
			t.Errorf("history: call %s asked %v, answered %v; want both", id, asked[id], answered[id])
		}
	}
}

// TestPresentationPassesTheGate: what a tool presents of its call (a
// program's output, a diff, its outcome) reaches the faces through the
// context gate like the result's text; a result the gate withholds
// presents nothing of what it found.
func TestPresentationPassesTheGate(t *testing.T) {
	const secret = "s3cr3t-value-0123456789"
	show := &fakeTool{name: "show", ro: true, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "printed " + secret, Present: &tools.Presentation{Title: "Show " + secret, Outcome: "found " + secret,
			Command: &tools.CommandOutput{Command: "echo " + secret, Stdout: secret + "\n"},
			Diffs:   []tools.Diff{{Path: "a.txt", Old: "x", New: "key=" + secret}}}}, nil
	}}
	m := &scriptModel{resps: []*llm.Response{calls("", call("show", `{}`)), answer("done")}}
	res, rec := runTask(t, Config{Validate: ValidateOff, Secrets: func() []string { return []string{secret} }}, m, staticTools(show), TaskSpec{Kind: KindAsk, Prompt: "p"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	n := 0
	for _, e := range rec.all() {
		if e.Kind != EventToolFinished {
			continue
		}
		n++
		b, err := json.Marshal(e.Present)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("the finished call's presentation shows the secret: %s", b)
		}
		if e.Present.Command == nil || len(e.Present.Diffs) != 1 || e.Present.Outcome == "" {
			t.Errorf("presentation lost its content: %s", b)
		}
	}
	if n != 1 {
		t.Fatalf("%d finished calls; want 1", n)
	}
	for _, c := range res.Commands {
		if strings.Contains(c.Command+c.Stdout, secret) {
			t.Errorf("the report's command shows the secret: %+v", c)
		}
	}
	if len(res.Commands) != 1 {
		t.Errorf("report commands %+v; want the one the tool presented", res.Commands)
	}
}
