package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
)

// fast is a retry policy for tests: short waits, the real logic.
var fast = llm.RetryPolicy{MaxAttempts: 5, Base: 5 * time.Millisecond, Cap: 20 * time.Millisecond}

// start runs a fake model with turns and returns a client configured for it.
func start(t *testing.T, turns []fakemodel.Turn, edit func(*llm.Config), opts ...llm.Option) (*llm.Client, *fakemodel.Server) {
	t.Helper()
	srv, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg := llm.Config{BaseURL: srv.URL(), APIKey: "sk-test", Model: "fake-model", Retry: fast, TotalDeadline: 20 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	c, err := llm.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// events collects what Complete reports.
type events struct{ list []llm.Event }

func (e *events) on(ev llm.Event) { e.list = append(e.list, ev) }

func (e *events) text(kind llm.EventKind) string {
	var b strings.Builder
	for _, ev := range e.list {
		if ev.Kind == kind {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func (e *events) retries() []llm.Event {
	var out []llm.Event
	for _, ev := range e.list {
		if ev.Kind == llm.EventRetry {
			out = append(out, ev)
		}
	}
	return out
}

func userReq(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a test."},
		{Role: llm.RoleUser, Content: text},
	}}
}

const (
	argsRead = `{"path":"internal/server/handler.go","startLine":10,"endLine":120}`
	argsGrep = `{"pattern":"func (s \\*Server) Handle","glob":"**/*.go","caseSensitive":true}`
)

func TestToolCallsSplitAcrossManyDeltas(t *testing.T) {
	tests := []struct {
		name  string
		index string
	}{
		{"sequential indexes", "sequential"},
		{"every call at index 0 with its own ID", "zero"},
		{"no index at all", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := start(t, []fakemodel.Turn{{
				Text:          "Let me look at the handler and search for callers.",
				ToolCallIndex: tt.index,
				ChunkSize:     3,
				ToolCalls: []fakemodel.ToolCall{
					{ID: "call_a", Name: "read_file", Arguments: argsRead},
					{ID: "call_b", Name: "grep", Arguments: argsGrep},
					{ID: "call_c", Name: "list_files", Arguments: ""},
				},
			}}, nil)
			var ev events
			resp, err := c.Complete(context.Background(), userReq("find the handler"), ev.on)
			if err != nil {
				t.Fatal(err)
			}
			want := []llm.ToolCall{
				{ID: "call_a", Name: "read_file", Arguments: argsRead},
				{ID: "call_b", Name: "grep", Arguments: argsGrep},
				{ID: "call_c", Name: "list_files", Arguments: "{}"},
			}
			if len(resp.Message.ToolCalls) != len(want) {
				t.Fatalf("got %d calls %+v; want %d", len(resp.Message.ToolCalls), resp.Message.ToolCalls, len(want))
			}
			for i, w := range want {
				if g := resp.Message.ToolCalls[i]; g != w {
					t.Errorf("call %d = %+v; want %+v", i, g, w)
				}
			}
			if resp.FinishReason != llm.FinishToolCalls {
				t.Errorf("finish = %q; want tool_calls", resp.FinishReason)
			}
			if got := ev.text(llm.EventText); got != resp.Message.Content || got != "Let me look at the handler and search for callers." {
				t.Errorf("streamed text %q, content %q", got, resp.Message.Content)
			}
			if n := strings.Count(strings.Join(eventsOf(ev, llm.EventText), "|"), "|") + 1; n < 10 {
				t.Errorf("text came in %d deltas; want many", n)
			}
		})
	}
}

func eventsOf(e events, kind llm.EventKind) []string {
	var out []string
	for _, ev := range e.list {
		if ev.Kind == kind {
			out = append(out, ev.Text)
		}
	}
	return out
}

func TestReasoningKeptApartAndNeverSentBack(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		t.Run(field, func(t *testing.T) {
			c, srv := start(t, []fakemodel.Turn{
				{Reasoning: "The user wants X; I should read the file first.", ReasoningField: field, Text: "Reading.",
					ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.go"}`}}},
				{Text: "Done."},
			}, nil)
			var ev events
			req := userReq("do X")
			resp, err := c.Complete(context.Background(), req, ev.on)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Reasoning != "The user wants X; I should read the file first." {
				t.Errorf("Reasoning = %q", resp.Message.Reasoning)
			}
			if resp.Message.Content != "Reading." || ev.text(llm.EventReasoning) != resp.Message.Reasoning {
				t.Errorf("content %q, reasoning events %q", resp.Message.Content, ev.text(llm.EventReasoning))
			}
			req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Name: "read_file", Content: ""})
			if _, err := c.Complete(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[1].Body
			if bytes.Contains(body, []byte("I should read the file")) || bytes.Contains(body, []byte(`"reasoning`)) {
				t.Errorf("reasoning was sent back: %s", body)
			}
			// An empty tool result goes out as a placeholder text.
			msgs := srv.Requests()[1].Chat.Messages
			if last := msgs[len(msgs)-1]; last.Role != "tool" || last.Content != llm.EmptyToolResult || last.ToolCallID != "c1" {
				t.Errorf("tool message sent as %+v; want content %q", last, llm.EmptyToolResult)
			}
		})
	}
}

func TestUsageInLastChunkAndTiming(t *testing.T) {
	want := llm.Usage{InputTokens: 1200, OutputTokens: 85, CachedTokens: 1024, ReasoningTokens: 40}
	c, srv := start(t, []fakemodel.Turn{
		{Text: "hello there, a few words", Usage: &want, Delay: fakemodel.Duration(30 * time.Millisecond), ChunkDelay: fakemodel.Duration(2 * time.Millisecond)},
		{Text: "second"},
	}, nil)
	resp, err := c.Complete(context.Background(), userReq("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage != want {
		t.Errorf("Usage = %+v; want %+v", resp.Usage, want)
	}
	if resp.FirstToken < 30*time.Millisecond || resp.Duration < resp.FirstToken || resp.Attempts != 1 {
		t.Errorf("FirstToken %v, Duration %v, Attempts %d; want FirstToken >= 30ms <= Duration, 1 attempt", resp.FirstToken, resp.Duration, resp.Attempts)
	}
	if so := srv.Requests()[0].Chat.StreamOptions; so == nil || !so.IncludeUsage {
		t.Errorf("stream_options.include_usage not requested: %+v", so)
	}
	// The fake server simulates a prefix cache: the second request of the
	// conversation reuses the first one's prefix.
	req := userReq("hi")
	req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleUser, Content: "more"})
	resp2, err := c.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp2.Usage.CachedTokens == 0 || resp2.Usage.CachedTokens >= resp2.Usage.InputTokens {
		t.Errorf("second call usage %+v; want some but not all input cached", resp2.Usage)
	}
}

func Test429WithRetryAfterThenSuccess(t *testing.T) {
	c, srv := start(t, []fakemodel.Turn{
		{Status: 429, Headers: map[string]string{"Retry-After": "1"}},
		{Text: "ok"},
	}, nil)
	var ev events
	resp, err := c.Complete(context.Background(), userReq("hi"), ev.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "ok" || resp.Attempts != 2 {
		t.Errorf("content %q attempts %d; want ok after 2", resp.Message.Content, resp.Attempts)
	}
	r := ev.retries()
	if len(r) != 1 || r[0].Wait != time.Second || r[0].Status != 429 || r[0].Attempt != 1 {
		t.Fatalf("retry events %+v; want one with Wait 1s, Status 429", r)
	}
	reqs := srv.Requests()
	if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 950*time.Millisecond {
		t.Errorf("second request came %v after the first; Retry-After: 1 asked for 1s", gap)
	}
}

func TestThree503sThenSuccess(t *testing.T) {
	c, srv := start(t, []fakemodel.Turn{
		{Status: 503, Times: 3, Body: "<html><body><h1>503 Service Unavailable</h1></body></html>"},
		{Text: "finally"},
	}, nil)
	var ev events
	resp, err := c.Complete(context.Background(), userReq("hi"), ev.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "finally" || resp.Attempts != 4 || len(srv.Requests()) != 4 {
		t.Errorf("content %q attempts %d requests %d; want finally after 4", resp.Message.Content, resp.Attempts, len(srv.Requests()))
	}
	r := ev.retries()
	if len(r) != 3 {
		t.Fatalf("%d retry events; want 3", len(r))
	}
	for i, e := range r {
		if e.Status != 503 || e.Attempt != i+1 || e.Wait <= 0 || e.Wait > fast.Cap || !strings.Contains(e.Err, "Service Unavailable") {
			t.Errorf("retry %d = %+v", i, e)
		}
	}
}

func TestTransientRunsOutOfAttempts(t *testing.T) {
	c, srv := start(t, []fakemodel.Turn{{Status: 502, Times: -1}}, nil)
	_, err := c.Complete(context.Background(), userReq("hi"), nil)
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindTransient || le.Attempts != fast.MaxAttempts || le.Status != 502 {
		t.Fatalf("err = %v (%#v); want transient after %d attempts", err, le, fast.MaxAttempts)
	}
	if n := len(srv.Requests()); n != fast.MaxAttempts {
		t.Errorf("%d requests; want %d", n, fast.MaxAttempts)
	}
}

func TestPermanentErrorsFailAtOnce(t *testing.T) {
	tests := []struct {
		name   string
		turn   fakemodel.Turn
		kind   llm.ErrorKind
		advice string
	}{
		{"401 bad key", fakemodel.Turn{Status: 401, Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`},
			llm.KindAuth, "the API key was rejected (401): set OPENAI_API_KEY or agentls.apiKeyEnv"},
		{"403", fakemodel.Turn{Status: 403}, llm.KindForbidden, "access denied (403)"},
		{"404 model", fakemodel.Turn{Status: 404, Body: `{"error":{"message":"The model 'gpt-9' does not exist","code":"model_not_found"}}`},
			llm.KindNotFound, `model "fake-model" or the chat endpoint was not found`},
		{"400 invalid", fakemodel.Turn{Status: 400, Body: `{"error":{"message":"Unsupported parameter: 'temperature'","type":"invalid_request_error"}}`},
			llm.KindInvalid, "Unsupported parameter"},
		{"400 context length", fakemodel.Turn{Status: 400, ErrorCode: "context_length_exceeded"}, llm.KindContextLength, "longer than the context window"},
		{"429 quota", fakemodel.Turn{Status: 429, ErrorCode: "insufficient_quota"}, llm.KindQuota, "quota is exhausted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.turn.Times = -1
			c, srv := start(t, []fakemodel.Turn{tt.turn}, nil)
			var ev events
			begin := time.Now()
			_, err := c.Complete(context.Background(), userReq("hi"), ev.on)
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != tt.kind || !le.Permanent() {
				t.Fatalf("err = %v; want a permanent %s error", err, tt.kind)
			}
			if !strings.Contains(err.Error(), tt.advice) {
				t.Errorf("message %q does not say %q", err.Error(), tt.advice)
			}
			if n := len(srv.Requests()); n != 1 || len(ev.retries()) != 0 {
				t.Errorf("%d requests, %d retries; want exactly one request", n, len(ev.retries()))
			}
			if d := time.Since(begin); d > 2*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
}

func TestBrokenStreamsAreRetriedWhole(t *testing.T) {
	call := fakemodel.ToolCall{ID: "call_1", Name: "edit_file", Arguments: `{"path":"main.go","old":"fmt.Println(1)","new":"fmt.Println(2)"}`}
	tests := []struct {
		name string
		bad  fakemodel.Turn
	}{
		{"cut after half the arguments", fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call}, BreakInArguments: true}},
		{"cut after 3 chunks", fakemodel.Turn{Text: "some words of text", BreakAfterChunks: 3}},
		{"error event inside the stream", fakemodel.Turn{Text: "partial", StreamError: "server overloaded"}},
		{"garbage", fakemodel.Turn{Garbage: "data: {not json at all\n\n"}},
		{"garbage without data lines", fakemodel.Turn{Garbage: "<html>oops</html>\n"}},
		{"stall beyond the timeout", fakemodel.Turn{Text: "slow text", ChunkDelay: fakemodel.Duration(3 * time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := start(t, []fakemodel.Turn{tt.bad, {Text: "Editing.", ToolCalls: []fakemodel.ToolCall{call}}},
				func(cfg *llm.Config) { cfg.Timeout = 300 * time.Millisecond })
			var ev events
			resp, err := c.Complete(context.Background(), userReq("edit"), ev.on)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Attempts != 2 || len(srv.Requests()) != 2 || len(ev.retries()) != 1 {
				t.Errorf("attempts %d requests %d retries %d; want 2, 2, 1", resp.Attempts, len(srv.Requests()), len(ev.retries()))
			}
			got := resp.Message.ToolCalls
			if len(got) != 1 || got[0].Arguments != string(call.Arguments) || got[0].Incomplete || !json.Valid([]byte(got[0].Arguments)) {
				t.Fatalf("calls %+v; want the one complete call", got)
			}
			if resp.Message.Content != "Editing." {
				t.Errorf("content %q: text of the failed attempt leaked into the answer", resp.Message.Content)
			}
		})
	}
}

func TestLengthCutMarksCallsIncomplete(t *testing.T) {
	c, _ := start(t, []fakemodel.Turn{{
		Text:         "Writing the file now",
		ToolCalls:    []fakemodel.ToolCall{{ID: "w1", Name: "write_file", Arguments: `{"path":"big.go","content":"package big\n\nfunc`}},
		FinishReason: "length",
	}}, nil)
	resp, err := c.Complete(context.Background(), userReq("write"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != llm.FinishLength || !resp.Truncated() {
		t.Errorf("finish %q; want length", resp.FinishReason)
	}
	if len(resp.Message.ToolCalls) != 1 || !resp.Message.ToolCalls[0].Incomplete {
		t.Errorf("calls %+v; want one Incomplete call", resp.Message.ToolCalls)
	}
	if resp.Attempts != 1 {
		t.Errorf("a cut answer was retried (%d attempts): the agent decides, not the client", resp.Attempts)
	}
}

func TestSlowServerBeyondTheDeadline(t *testing.T) {
	c, _ := start(t, []fakemodel.Turn{{Text: "late", Delay: fakemodel.Duration(5 * time.Second), Times: -1}},
		func(cfg *llm.Config) { cfg.TotalDeadline = 300 * time.Millisecond })
	begin := time.Now()
	_, err := c.Complete(context.Background(), userReq("hi"), nil)
	took := time.Since(begin)
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindDeadline || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want a deadline error", err)
	}
	if !strings.Contains(err.Error(), "300ms") {
		t.Errorf("message %q does not name the deadline", err)
	}
	if took > 2*time.Second {
		t.Errorf("returned after %v; the deadline was 300ms", took)
	}
}

func TestCancelledContextReturnsWithin100ms(t *testing.T) {
	tests := []struct {
		name string
		turn fakemodel.Turn
	}{
		{"waiting for headers", fakemodel.Turn{Text: "x", Delay: fakemodel.Duration(10 * time.Second)}},
		{"mid-stream", fakemodel.Turn{Text: "a long answer in many pieces", ChunkDelay: fakemodel.Duration(10 * time.Second)}},
		{"in a retry wait", fakemodel.Turn{Status: 429, Headers: map[string]string{"Retry-After": "10"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := start(t, []fakemodel.Turn{tt.turn}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := c.Complete(ctx, userReq("hi"), nil)
				done <- err
			}()
			// wait until the server has the request, then cancel
			for deadline := time.Now().Add(5 * time.Second); len(srv.Requests()) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("no request arrived")
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			cancelled := time.Now()
			cancel()
			select {
			case err := <-done:
				if took := time.Since(cancelled); took > 100*time.Millisecond {
					t.Errorf("returned %v after cancel; want within 100ms", took)
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v; want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Complete did not return after cancel")
			}
		})
	}
}

// TestConsecutiveRequestsShareAByteIdenticalPrefix checks that the
// second request of a conversation repeats the first one's bytes up to where
// the new messages begin: model, tool definitions and earlier messages come
// first and encode identically.
func TestConsecutiveRequestsShareAByteIdenticalPrefix(t *testing.T) {
	zero := 0.0
	c, srv := start(t, []fakemodel.Turn{
		{Reasoning: "think", Text: "Looking.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "grep", Arguments: argsGrep}}},
		{Text: "Found it.", Times: 3},
	}, func(cfg *llm.Config) {
		cfg.Temperature = &zero
		cfg.MaxCompletionTokens = 4096
		cfg.ExtraBody = map[string]any{"options": map[string]any{"num_ctx": 32768, "a": 1}, "top_k": 20}
	})
	tools := []llm.ToolDef{
		{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object", "properties":{"path":{"type":"string"}}}`)},
		{Name: "grep", Description: "Search <code> & text.", Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
	}
	req := userReq("where is Handle?")
	req.Tools = tools
	r1, err := c.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, r1.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "server.go:12: func (s *Server) Handle()"})
	if _, err := c.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	b1, b2 := reqs[0].Body, reqs[1].Body
	// The first body's messages array ends at its last ']' before "stream"...
	end := bytes.Index(b1, []byte(`],"max_completion_tokens"`))
	if end < 0 {
		end = bytes.LastIndex(b1, []byte(`}]`)) + 1
	}
	if !bytes.HasPrefix(b2, b1[:end]) || b2[end] != ',' {
		t.Fatalf("prefix differs:\nfirst:  %s\nsecond: %s", b1, b2)
	}
	if !bytes.HasPrefix(b1, []byte(`{"model":"fake-model","tools":[`)) {
		t.Errorf("body does not start with model and tools: %.80s", b1)
	}
	if ti, mi := bytes.Index(b1, []byte(`"tools"`)), bytes.Index(b1, []byte(`"messages"`)); ti > mi {
		t.Errorf("tools come after messages")
	}
	var m map[string]any
	if err := json.Unmarshal(b2, &m); err != nil {
		t.Fatal(err)
	}
	if v, ok := m["temperature"]; !ok || v != 0.0 {
		t.Errorf("temperature = %v (present %t); want 0 sent", v, ok)
	}
	if m["max_completion_tokens"] != 4096.0 || m["max_tokens"] != nil {
		t.Errorf("max_completion_tokens %v, max_tokens %v", m["max_completion_tokens"], m["max_tokens"])
	}
	if opts, _ := m["options"].(map[string]any); opts["num_ctx"] != 32768.0 || m["top_k"] != 20.0 {
		t.Errorf("extra body not merged: options %v top_k %v", m["options"], m["top_k"])
	}
	// The same request encodes to the same bytes every time.
	for range 2 {
		if _, err := c.Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	reqs = srv.Requests()
	if !bytes.Equal(reqs[1].Body, reqs[2].Body) || !bytes.Equal(reqs[2].Body, reqs[3].Body) {
		t.Errorf("the same request encoded differently:\n%s\n%s", reqs[2].Body, reqs[3].Body)
	}
}

func TestAzureUsesDeploymentPathVersionAndAPIKeyHeader(t *testing.T) {
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "azure ok"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := strings.TrimSuffix(srv.URL(), "/v1")
	c, err := llm.New(llm.Config{BaseURL: base, APIKey: "az-key", Model: "gpt-4o", Azure: true, AzureDeployment: "my-dep", AzureAPIVersion: "2024-10-21", Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(context.Background(), userReq("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if resp.Message.Content != "azure ok" || r.Path != "/openai/deployments/my-dep/chat/completions" || r.RawQuery != "api-version=2024-10-21" || r.APIKey != "az-key" || r.Header.Get("Authorization") != "" {
		t.Errorf("path %s query %s key %q auth %q", r.Path, r.RawQuery, r.APIKey, r.Header.Get("Authorization"))
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		cfg  llm.Config
		want string
	}{
		{llm.Config{BaseURL: "http://x/v1"}, "no model configured"},
		{llm.Config{BaseURL: "localhost:11434", Model: "m"}, "not an http(s) URL"},
		{llm.Config{Model: "m", ExtraBody: map[string]any{"messages": 1}}, "would replace"},
	}
	for _, tt := range tests {
		if _, err := llm.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%v) = %v; want %q", tt.cfg, err, tt.want)
		}
	}
}
