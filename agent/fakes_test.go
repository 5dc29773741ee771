package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// scriptModel answers from a list of responses and records every request.
type scriptModel struct {
	mu    sync.Mutex
	resps []*llm.Response
	reqs  []llm.Request
	block chan struct{} // when set, a call after the script blocks until ctx ends
}

func (m *scriptModel) Complete(ctx context.Context, req llm.Request, on func(llm.Event)) (*llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	if len(m.resps) == 0 {
		m.mu.Unlock()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r := m.resps[0]
	m.resps = m.resps[1:]
	m.mu.Unlock()
	if r == nil {
		return nil, errors.New("bad request: scripted failure")
	}
	if on != nil && r.Message.Content != "" {
		on(llm.Event{Kind: llm.EventText, Text: r.Message.Content})
	}
	cp := *r
	cp.Usage = llm.Usage{InputTokens: 100, OutputTokens: 10}
	cp.Duration = time.Millisecond
	return &cp, nil
}

func (m *scriptModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.reqs...)
}

func answer(text string) *llm.Response {
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, FinishReason: llm.FinishStop}
}

var callSeq int

func call(name, args string) llm.ToolCall {
	callSeq++
	return llm.ToolCall{ID: fmt.Sprintf("call_%d", callSeq), Name: name, Arguments: args}
}

func calls(text string, cs ...llm.ToolCall) *llm.Response {
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text, ToolCalls: cs}, FinishReason: llm.FinishToolCalls}
}

// fakeTool is a tool whose behaviour is a function.
type fakeTool struct {
	name string
	ro   bool
	run  func(ctx context.Context, args json.RawMessage) (tools.Result, error)
}

func (f *fakeTool) Name() string            { return f.name }
func (f *fakeTool) Description() string     { return "fake " + f.name }
func (f *fakeTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (f *fakeTool) ReadOnly() bool          { return f.ro }
func (f *fakeTool) Effects() tools.Effect {
	if f.ro {
		return 0
	}
	return tools.WritesFiles
}
func (f *fakeTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	return f.run(ctx, args)
}
func (f *fakeTool) Present(json.RawMessage, *tools.Result) tools.Presentation {
	return tools.Presentation{}
}

func textTool(name string, ro bool, text string) *fakeTool {
	return &fakeTool{name: name, ro: ro, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: text}, nil
	}}
}

// planTool mimics update_plan: it returns the plan as Data.
func planTool() *fakeTool {
	return &fakeTool{name: "update_plan", ro: true, run: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
		var p tools.Plan
		if err := json.Unmarshal(args, &p); err != nil {
			return tools.Result{IsError: true, Text: "error: bad plan"}, nil
		}
		return tools.Result{Text: fmt.Sprintf("plan updated: %d open", p.Open()), Data: &p}, nil
	}}
}

// recorder is a Sink that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Event(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// toolSet builds a task's tools with its guard, as the host does.
type toolSet func(g *Guard) []tools.Tool

func staticTools(ts ...tools.Tool) toolSet {
	return func(*Guard) []tools.Tool { return ts }
}
