package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// RecordedRequest is one request the server received.
type RecordedRequest struct {
	N        int         // 1-based number among chat and completions requests
	Turn     int         // 0-based index of the turn that answered, -1 for none
	Time     time.Time   // arrival
	Method   string      //
	Path     string      //
	RawQuery string      //
	Header   http.Header // Authorization and api-key values are redacted
	// APIKey is the bearer token or api-key header received, so a test can
	// check the client sent it. It is never logged.
	APIKey string
	Body   []byte                       // the raw body
	Chat   openai.ChatCompletionRequest // the body decoded (a chat request)
	// Completion is the body decoded when the request went to the
	// completions endpoint (fill in the middle), nil for a chat request.
	Completion *openai.CompletionRequest
}

// Server is a running scripted model server.
type Server struct {
	script Script
	log    *slog.Logger

	mu       sync.Mutex // guards the fields below
	used     []int      // per turn: requests answered
	requests []RecordedRequest
	prevBody []byte                   // last request body, for simulated prefix caching
	gates    map[string]chan struct{} // by name: closed when opened

	srv *http.Server
	ln  net.Listener
}

// Start serves script on a free port of 127.0.0.1.
func Start(script Script) (*Server, error) { return Listen("127.0.0.1:0", script, nil) }

// Listen serves script on addr, logging each request to logger (nil: none).
func Listen(addr string, script Script, logger *slog.Logger) (*Server, error) {
	if err := script.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{script: script, log: logger, used: make([]int, len(script.Turns)), ln: ln}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	go s.srv.Serve(ln) // returns when Close closes the listener
	return s, nil
}

// URL is the base URL to configure a client with, ending in /v1.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server and cuts open connections.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns a copy of the chat-completion requests received so far.
func (s *Server) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RecordedRequest(nil), s.requests...)
}

// ServeHTTP answers /v1/chat/completions (and the Azure and unprefixed
// forms) and /v1/completions (fill in the middle: prompt and suffix) from
// the script, /v1/models with one model, and a POST to
// /v1/gates/NAME by opening that gate (Turn.Gate).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, gate, isGate := strings.Cut(r.URL.Path, "/gates/")
	switch {
	case r.Method == http.MethodPost && isGate && gate != "" && !strings.Contains(gate, "/"):
		s.OpenGate(gate)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.chat(w, r)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/completions"):
		s.chat(w, r)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake","object":"model","owned_by":"fakemodel"}]}`)
	default:
		writeError(w, http.StatusNotFound, "fakemodel: no route for "+r.Method+" "+r.URL.Path, "not_found")
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakemodel: read body: "+err.Error(), "invalid_request_error")
		return
	}
	rec := RecordedRequest{Time: time.Now(), Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Turn: -1}
	if a := rec.Header.Get("Authorization"); a != "" {
		rec.APIKey = strings.TrimPrefix(a, "Bearer ")
		rec.Header.Set("Authorization", "[redacted]")
	}
	if a := rec.Header.Get("Api-Key"); a != "" {
		rec.APIKey = a
		rec.Header.Set("Api-Key", "[redacted]")
	}
	var decodeErr error
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		decodeErr = json.Unmarshal(body, &rec.Chat)
	} else {
		rec.Completion = new(openai.CompletionRequest)
		decodeErr = json.Unmarshal(body, rec.Completion)
		rec.Chat.Model = rec.Completion.Model
	}

	s.mu.Lock()
	rec.N = len(s.requests) + 1
	turn := s.pick(rec.N, rec)
	rec.Turn = turn
	prev := s.prevBody
	s.prevBody = body
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	if decodeErr != nil {
		s.log.Info("request", "n", rec.N, "error", decodeErr.Error())
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fakemodel: request %d: body is not a chat or completion request: %v", rec.N, decodeErr), "invalid_request_error")
		return
	}
	if turn < 0 {
		s.log.Info("request", "n", rec.N, "turn", "none")
		writeError(w, http.StatusInternalServerError,
			fmt.Sprintf("fakemodel: the script has no turn left for request %d (%d turns)", rec.N, len(s.script.Turns)), "script_exhausted")
		return
	}
	t := s.script.Turns[turn]
	s.log.Info("request", "n", rec.N, "turn", turn+1, "name", t.Name, "stream", rec.Chat.Stream, "status", max(t.Status, 200))
	ctx := r.Context()
	if !sleep(ctx, time.Duration(t.Delay)) {
		return
	}
	for k, v := range t.Headers {
		w.Header().Set(k, v)
	}
	switch {
	case t.Status != 0:
		if t.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(t.Status)
			io.WriteString(w, t.Body)
			return
		}
		writeError(w, t.Status, fmt.Sprintf("fakemodel: scripted error %d for request %d", t.Status, rec.N), t.ErrorCode)
	case t.Garbage != "":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, t.Garbage)
	case rec.Completion != nil:
		if s.hold(ctx, rec, t) {
			s.text(w, rec, t, prev)
		}
	case rec.Chat.Stream:
		s.stream(ctx, w, rec, t, prev)
	default:
		if s.hold(ctx, rec, t) {
			s.whole(w, rec, t, prev)
		}
	}
}

// hold waits, for an answer sent whole (not streamed), at the turn's gate
// until it is opened; it reports false when the request ended first.
func (s *Server) hold(ctx context.Context, rec RecordedRequest, t Turn) bool {
	if t.Gate == "" {
		return true
	}
	s.log.Info("holding at gate", "n", rec.N, "gate", t.Gate)
	select {
	case <-s.gate(t.Gate):
		return true
	case <-ctx.Done():
		return false
	}
}

// gate returns the channel of the gate named name, closed once it is
// opened.
func (s *Server) gate(name string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gates == nil {
		s.gates = map[string]chan struct{}{}
	}
	g, ok := s.gates[name]
	if !ok {
		g = make(chan struct{})
		s.gates[name] = g
	}
	return g
}

// OpenGate opens the gate named name: the streams held at it go on, and
// later ones pass it. Opening an open gate does nothing.
func (s *Server) OpenGate(name string) {
	g := s.gate(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-g:
	default:
		close(g)
		s.log.Info("gate opened", "gate", name)
	}
}

// pick returns the turn answering request n and counts it used, or -1.
func (s *Server) pick(n int, req RecordedRequest) int {
	avail := func(i int) bool {
		t := s.script.Turns[i]
		return t.Times < 0 || s.used[i] < max(t.Times, 1)
	}
	for i, t := range s.script.Turns {
		if t.Match != nil && avail(i) && t.Match.matches(n, req) {
			s.used[i]++
			return i
		}
	}
	for i, t := range s.script.Turns {
		if t.Match == nil && avail(i) {
			s.used[i]++
			return i
		}
	}
	return -1
}

func (m *Match) matches(n int, rec RecordedRequest) bool {
	if m.Request != 0 && m.Request != n {
		return false
	}
	if m.Prompt != "" || m.Suffix != "" {
		c := rec.Completion
		return c != nil && strings.Contains(promptOf(c.Prompt), m.Prompt) && strings.Contains(c.Suffix, m.Suffix)
	}
	req := rec.Chat
	last := func(role string) (string, bool) {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == role {
				return contentOf(req.Messages[i]), true
			}
		}
		return "", false
	}
	check := func(want, role string) bool {
		if want == "" {
			return true
		}
		got, ok := last(role)
		return ok && strings.Contains(got, want)
	}
	if !check(m.LastUser, "user") || !check(m.LastToolResult, "tool") {
		return false
	}
	if m.LastMessage != "" && (len(req.Messages) == 0 || !strings.Contains(contentOf(req.Messages[len(req.Messages)-1]), m.LastMessage)) {
		return false
	}
	any := func(want string, role string) bool {
		for _, msg := range req.Messages {
			if (role == "" || msg.Role == role) && strings.Contains(contentOf(msg), want) {
				return true
			}
		}
		return false
	}
	if m.AnyMessage != "" && !any(m.AnyMessage, "") {
		return false
	}
	if m.System != "" && !any(m.System, "system") {
		return false
	}
	return true
}

// promptOf is a completion request's prompt as text (a string, or the
// first of a list).
func promptOf(p any) string {
	switch p := p.(type) {
	case string:
		return p
	case []any:
		if len(p) > 0 {
			s, _ := p[0].(string)
			return s
		}
	}
	return ""
}

func contentOf(m openai.ChatCompletionMessage) string {
	if m.Content != "" || len(m.MultiContent) == 0 {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.MultiContent {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Wire types, written by hand so optional fields (index, reasoning) can be
// left out as real servers do.
type (
	wireChunk struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   *wireUsage   `json:"usage,omitempty"`
	}
	wireChoice struct {
		Index        int           `json:"index"`
		Delta        *wireDeltaMsg `json:"delta,omitempty"`
		Message      *wireDeltaMsg `json:"message,omitempty"`
		FinishReason *string       `json:"finish_reason"`
	}
	wireDeltaMsg struct {
		Role             string         `json:"role,omitempty"`
		Content          *string        `json:"content,omitempty"`
		ReasoningContent string         `json:"reasoning_content,omitempty"`
		Reasoning        string         `json:"reasoning,omitempty"`
		ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	}
	wireToolCall struct {
		Index    *int   `json:"index,omitempty"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	wireUsage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
)

func (t Turn) finish() string {
	switch {
	case t.FinishReason != "":
		return t.FinishReason
	case len(t.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

func (t Turn) callID(n, i int) string {
	if id := t.ToolCalls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("call_%d_%d", n, i)
}

// usage is the turn's usage or a simulated one.
func (t Turn) usage(body, prev []byte) *wireUsage {
	var u wireUsage
	if t.Usage != nil {
		u.PromptTokens, u.CompletionTokens = t.Usage.InputTokens, t.Usage.OutputTokens
		u.PromptTokensDetails.CachedTokens = t.Usage.CachedTokens
		u.CompletionTokensDetails.ReasoningTokens = t.Usage.ReasoningTokens
	} else {
		common := 0
		for common < len(body) && common < len(prev) && body[common] == prev[common] {
			common++
		}
		out := len(t.Text) + len(t.Reasoning)
		for _, c := range t.ToolCalls {
			out += len(c.Name) + len(c.Arguments)
		}
		u.PromptTokens = max(len(body)/4, 1)
		u.PromptTokensDetails.CachedTokens = common / 4
		u.CompletionTokens = max(out/4, 1)
		u.CompletionTokensDetails.ReasoningTokens = len(t.Reasoning) / 4
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return &u
}

// stream answers with server-sent events.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, rec RecordedRequest, t Turn, prev []byte) {
	chunks, argFrom, argTo := t.chunks(rec.N)
	id := fmt.Sprintf("chatcmpl-fake-%d", rec.N)
	model := rec.Chat.Model
	breakAt := -1
	if t.BreakAfterChunks > 0 {
		breakAt = t.BreakAfterChunks
	}
	if t.BreakInArguments && argTo > argFrom {
		breakAt = argFrom + max((argTo-argFrom)/2, 1)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(c wireChunk) {
		c.ID, c.Object, c.Created, c.Model = id, "chat.completion.chunk", rec.Time.Unix(), model
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	for i, c := range chunks {
		if i == breakAt {
			panic(http.ErrAbortHandler) // cut the connection mid-stream
		}
		if i > 0 && !sleep(ctx, time.Duration(t.ChunkDelay)) {
			return
		}
		if t.Gate != "" && i == t.HoldAfterChunks {
			s.log.Info("holding at gate", "n", rec.N, "gate", t.Gate, "chunks sent", i)
			select {
			case <-s.gate(t.Gate):
			case <-ctx.Done():
				return
			}
		}
		send(wireChunk{Choices: []wireChoice{{Delta: c}}})
	}
	if breakAt >= len(chunks) {
		panic(http.ErrAbortHandler)
	}
	if t.StreamError != "" {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": t.StreamError, "type": "server_error"}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		return
	}
	fr := t.finish()
	send(wireChunk{Choices: []wireChoice{{Delta: &wireDeltaMsg{}, FinishReason: &fr}}})
	if rec.Chat.StreamOptions != nil && rec.Chat.StreamOptions.IncludeUsage {
		send(wireChunk{Choices: []wireChoice{}, Usage: t.usage(rec.Body, prev)})
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// chunks splits the turn's answer into deltas: role, reasoning, text, then
// tool calls. argFrom and argTo bound the chunks carrying arguments.
func (t Turn) chunks(n int) (out []*wireDeltaMsg, argFrom, argTo int) {
	size := t.ChunkSize
	if size <= 0 {
		size = 4
	}
	out = append(out, &wireDeltaMsg{Role: "assistant"})
	for _, piece := range splitRunes(t.Reasoning, size) {
		d := &wireDeltaMsg{}
		if t.ReasoningField == "reasoning" {
			d.Reasoning = piece
		} else {
			d.ReasoningContent = piece
		}
		out = append(out, d)
	}
	for _, piece := range splitRunes(t.Text, size) {
		out = append(out, &wireDeltaMsg{Content: &piece})
	}
	argFrom = len(out)
	for i, c := range t.ToolCalls {
		index := func() *int {
			switch t.ToolCallIndex {
			case "zero":
				return new(int)
			case "none":
				return nil
			}
			v := i
			return &v
		}
		head := wireToolCall{Index: index(), ID: t.callID(n, i), Type: "function"}
		head.Function.Name = c.Name
		out = append(out, &wireDeltaMsg{ToolCalls: []wireToolCall{head}})
		for _, piece := range splitRunes(string(c.Arguments), size) {
			d := wireToolCall{Index: index()}
			d.Function.Arguments = piece
			out = append(out, &wireDeltaMsg{ToolCalls: []wireToolCall{d}})
		}
	}
	return out, argFrom, len(out)
}

// splitRunes cuts s into pieces of at most size runes.
func splitRunes(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		i, n := 0, 0
		for i < len(s) && n < size {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			n++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// whole answers a non-streaming request.
func (s *Server) whole(w http.ResponseWriter, rec RecordedRequest, t Turn, prev []byte) {
	msg := &wireDeltaMsg{Role: "assistant", Content: &t.Text}
	if t.ReasoningField == "reasoning" {
		msg.Reasoning = t.Reasoning
	} else {
		msg.ReasoningContent = t.Reasoning
	}
	for i, c := range t.ToolCalls {
		tc := wireToolCall{ID: t.callID(rec.N, i), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, string(c.Arguments)
		msg.ToolCalls = append(msg.ToolCalls, tc)
	}
	fr := t.finish()
	resp := wireChunk{ID: fmt.Sprintf("chatcmpl-fake-%d", rec.N), Object: "chat.completion", Created: rec.Time.Unix(),
		Model: rec.Chat.Model, Choices: []wireChoice{{Message: msg, FinishReason: &fr}}, Usage: t.usage(rec.Body, prev)}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// text answers a completions request (fill in the middle) whole.
func (s *Server) text(w http.ResponseWriter, rec RecordedRequest, t Turn, prev []byte) {
	type choice struct {
		Text         string  `json:"text"`
		Index        int     `json:"index"`
		FinishReason *string `json:"finish_reason"`
	}
	fr := t.finish()
	resp := struct {
		ID      string     `json:"id"`
		Object  string     `json:"object"`
		Created int64      `json:"created"`
		Model   string     `json:"model"`
		Choices []choice   `json:"choices"`
		Usage   *wireUsage `json:"usage,omitempty"`
	}{fmt.Sprintf("cmpl-fake-%d", rec.N), "text_completion", rec.Time.Unix(), rec.Completion.Model,
		[]choice{{Text: t.Text, FinishReason: &fr}}, t.usage(rec.Body, prev)}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func writeError(w http.ResponseWriter, status int, msg, code string) {
	typ := "server_error"
	if status < 500 {
		typ = "invalid_request_error"
	}
	e := map[string]any{"message": msg, "type": typ}
	if code != "" {
		e["code"] = code
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// sleep waits d unless ctx ends first; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
