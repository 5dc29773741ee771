package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// EmptyToolResult is sent in place of an empty tool result: some services
// refuse a tool message without content.
const EmptyToolResult = "(the tool returned no output)"

// Client calls one model of an OpenAI-compatible service. It is safe for
// concurrent use.
type Client struct {
	cfg  Config
	api  *openai.Client
	tr   *transport
	log  *slog.Logger
	rec  Recorder
	seq  atomic.Int64
	rand func() float64 // in [0,1), for jitter
}

// Option configures a Client.
type Option func(*Client)

// WithLogger sends the client's log records (never the API key) to l.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// WithRecorder writes every call to r (the flight recorder).
func WithRecorder(r Recorder) Option { return func(c *Client) { c.rec = r } }

// WithHTTPClient replaces the underlying HTTP client (its Timeout should be
// zero: the client bounds calls with contexts).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.tr.hc = hc } }

// New returns a client for cfg.
func New(cfg Config, opts ...Option) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tr, err := newTransport(&http.Client{}, cfg)
	if err != nil {
		return nil, err
	}
	var oc openai.ClientConfig
	base, query := splitBaseURL(cfg.BaseURL)
	tr.query = query
	if cfg.Azure {
		oc = openai.DefaultAzureConfig(cfg.APIKey, base)
		oc.APIVersion = cfg.AzureAPIVersion
		dep := cfg.AzureDeployment
		oc.AzureModelMapperFunc = func(string) string { return dep }
	} else {
		oc = openai.DefaultConfig(cfg.APIKey)
		oc.BaseURL = base
	}
	oc.HTTPClient = tr
	c := &Client{
		cfg:  cfg,
		api:  openai.NewClientWithConfig(oc),
		tr:   tr,
		log:  slog.New(slog.DiscardHandler),
		rand: rand.Float64,
	}
	for _, o := range opts {
		o(c)
	}
	c.log.Debug("model client ready", "config", cfg)
	return c, nil
}

// Config returns the client's configuration with defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// Complete runs one chat-completion call, streamed. Text and reasoning
// deltas go to onEvent as they arrive (after an EventRetry, the text of the
// failed attempt is void and the answer streams again); so does every
// retry. Transient failures are retried within Config.TotalDeadline;
// permanent ones return at once as an *Error saying what to fix. A
// cancelled ctx returns ctx's error promptly. onEvent may be nil and is
// called on the caller's goroutine.
func (c *Client) Complete(ctx context.Context, req Request, onEvent func(Event)) (*Response, error) {
	return c.complete(ctx, req, onEvent, nil)
}

// Recorded is a Client whose calls are also written to a recorder of
// their own (a task's flight recorder), besides the client's recorder:
// the recorder wraps the model, and one client serves every task.
type Recorded struct {
	c   *Client
	rec Recorder
}

// RecordingTo returns c with every call also written to r (with the API
// key redacted like any other recording).
func (c *Client) RecordingTo(r Recorder) *Recorded { return &Recorded{c: c, rec: r} }

// Complete is Client.Complete, also recorded to the Recorded's recorder.
func (m *Recorded) Complete(ctx context.Context, req Request, onEvent func(Event)) (*Response, error) {
	return m.c.complete(ctx, req, onEvent, m.rec)
}

// complete makes one call, recorded to c's recorder and to extra.
func (c *Client) complete(ctx context.Context, req Request, onEvent func(Event), extra Recorder) (*Response, error) {
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	start := time.Now()
	seq := int(c.seq.Add(1))
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.cfg.TotalDeadline)
	defer cancel()

	oreq := c.buildRequest(req)
	x := Exchange{Time: start.UTC(), Seq: seq, Model: c.cfg.Model, BaseURL: redactURL(c.cfg.BaseURL)}
	var lastErr error
	var lastFail failure
	for attempt := 1; ; attempt++ {
		info := &attemptInfo{}
		resp, err := c.attempt(ctx, oreq, info, onEvent)
		x.Request = info.body
		x.Attempts = attempt
		if err == nil {
			resp.Attempts = attempt
			resp.Duration = time.Since(start)
			x.Message, x.FinishReason, x.Usage = &resp.Message, resp.FinishReason, resp.Usage
			x.DurationMs, x.FirstTokenMs = ms(resp.Duration), ms(resp.FirstToken)
			c.record(x, extra)
			c.log.Debug("model call", "seq", seq, "attempts", attempt, "finish", string(resp.FinishReason),
				"durationMs", x.DurationMs, "firstTokenMs", x.FirstTokenMs,
				"inputTokens", resp.Usage.InputTokens, "outputTokens", resp.Usage.OutputTokens, "cachedTokens", resp.Usage.CachedTokens)
			return resp, nil
		}
		fail := func() error {
			if parent.Err() != nil {
				return fmt.Errorf("model call cancelled: %w", parent.Err())
			}
			if ctx.Err() != nil {
				last := "no answer"
				if lastErr != nil {
					last = "last failure: " + lastErr.Error()
				}
				return &Error{Kind: KindDeadline, Attempts: attempt, Status: lastFail.status,
					Hint: fmt.Sprintf("the model did not answer within the total deadline of %s", c.cfg.TotalDeadline),
					Err:  fmt.Errorf("%w (%s)", context.DeadlineExceeded, last)}
			}
			return nil
		}()
		if fail != nil {
			return nil, c.failed(x, extra, start, fail)
		}
		f := c.classify(err)
		f.err = redactErr(f.err, c.cfg.secrets()...)
		lastErr, lastFail = errors.Join(errors.New(f.hint), f.err), f
		rec := Failure{Attempt: attempt, Status: f.status, Code: f.code, Error: f.hint + ": " + f.err.Error()}
		if !f.transient {
			x.Failures = append(x.Failures, rec)
			if f.kind == KindInvalid && req.HasImages() {
				f.kind, f.hint = KindImages, fmt.Sprintf("model %q refused the request with an image (%d): it may not take images; send the prompt without the image, or pick a model that takes images", c.cfg.Model, f.status)
			}
			return nil, c.failed(x, extra, start, &Error{Kind: f.kind, Status: f.status, Code: f.code, Attempts: attempt, Hint: f.hint, Err: f.err})
		}
		retryAfter := retryAfterOf(info)
		rec.RetryAfterMs = ms(retryAfter)
		if attempt >= c.cfg.Retry.MaxAttempts {
			x.Failures = append(x.Failures, rec)
			return nil, c.failed(x, extra, start, &Error{Kind: KindTransient, Status: f.status, Code: f.code, Attempts: attempt,
				Hint: f.hint + "; giving up", Err: f.err})
		}
		wait := c.backoff(attempt)
		if retryAfter > 0 {
			wait = retryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			x.Failures = append(x.Failures, rec)
			return nil, c.failed(x, extra, start, &Error{Kind: KindTransient, Status: f.status, Code: f.code, Attempts: attempt,
				Hint: fmt.Sprintf("%s; giving up: the next attempt (in %s) would pass the total deadline of %s", f.hint, wait.Round(time.Millisecond), c.cfg.TotalDeadline),
				Err:  f.err})
		}
		rec.WaitMs = ms(wait)
		x.Failures = append(x.Failures, rec)
		msg := f.hint
		if f.err != nil {
			msg += ": " + f.err.Error()
		}
		onEvent(Event{Kind: EventRetry, Attempt: attempt, Wait: wait, Status: f.status, Err: msg})
		c.log.Warn("model call failed, retrying", "seq", seq, "attempt", attempt, "status", f.status, "wait", wait, "error", msg)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// failed records and logs a failed call.
func (c *Client) failed(x Exchange, extra Recorder, start time.Time, err error) error {
	x.DurationMs = ms(time.Since(start))
	x.Error = err.Error()
	c.record(x, extra)
	c.log.Warn("model call failed", "seq", x.Seq, "attempts", x.Attempts, "error", err.Error())
	return err
}

// record hands x to the client's recorder and to extra (a Recorded's),
// with every occurrence of the API key replaced (a tool result may have
// echoed it).
func (c *Client) record(x Exchange, extra Recorder) {
	if c.rec == nil && extra == nil {
		return
	}
	if k := c.cfg.APIKey; k != "" {
		b, err := json.Marshal(x)
		if err == nil && bytes.Contains(b, []byte(k)) {
			b = bytes.ReplaceAll(b, []byte(k), []byte("[redacted]"))
			var y Exchange
			if json.Unmarshal(b, &y) == nil {
				x = y
			}
		}
	}
	for _, r := range []Recorder{c.rec, extra} {
		if r == nil {
			continue
		}
		if err := r.Record(x); err != nil {
			c.log.Warn("flight recorder", "error", err.Error())
		}
	}
}

// backoff is the capped exponential wait after the attempt-th failure, with
// "equal jitter": between half and all of the computed delay.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.Retry.Base
	for i := 1; i < attempt && d < c.cfg.Retry.Cap; i++ {
		d *= 2
	}
	d = min(d, c.cfg.Retry.Cap)
	return d/2 + time.Duration(c.rand()*float64(d/2))
}

// retryAfterOf reads Retry-After (seconds or an HTTP date) or the
// retry-after-ms header some services send.
func retryAfterOf(info *attemptInfo) time.Duration {
	if info.header == nil {
		return 0
	}
	if v := info.header.Get("Retry-After-Ms"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
			return time.Duration(f * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(info.header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 {
			return 0
		}
		return time.Duration(f * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// attempt makes one streamed request.
func (c *Client) attempt(ctx context.Context, oreq openai.ChatCompletionRequest, info *attemptInfo, onEvent func(Event)) (*Response, error) {
	actx, acancel := context.WithCancelCause(ctx)
	defer acancel(nil)
	stall := time.AfterFunc(c.cfg.Timeout, func() { acancel(errStalled) })
	defer stall.Stop()
	actx = context.WithValue(actx, attemptKey{}, info)

	t0 := time.Now()
	stream, err := c.api.CreateChatCompletionStream(actx, oreq)
	if err != nil {
		return nil, attemptErr(actx, err)
	}
	defer stream.Close()
	a := assembler{maxBytes: c.cfg.MaxResponseBytes, maxArgs: c.cfg.MaxToolArgsBytes}
	info.maxBody = c.cfg.MaxStreamBytes
	var firstToken time.Duration
	for {
		raw, err := stream.RecvRaw()
		if err != nil {
			if errors.Is(err, io.EOF) && actx.Err() == nil {
				break
			}
			return nil, attemptErr(actx, err)
		}
		stall.Reset(c.cfg.Timeout)
		if err := a.add(raw, onEvent); err != nil {
			return nil, err
		}
		if firstToken == 0 && a.gotToken {
			firstToken = time.Since(t0)
		}
	}
	msg, finish, err := a.result(info.sawDone())
	if err != nil {
		return nil, err
	}
	return &Response{Message: msg, FinishReason: finish, Usage: usageOf(a.usage), FirstToken: firstToken}, nil
}

// attemptErr names a stalled attempt as such.
func attemptErr(actx context.Context, err error) error {
	if cause := context.Cause(actx); errors.Is(cause, errStalled) {
		return fmt.Errorf("%w: %v", errStalled, err)
	}
	return err
}

// buildRequest converts req to go-openai's request. The result depends only
// on req and the configuration, and earlier messages convert to the same
// bytes every time, so consecutive requests share a byte-identical prefix
// . Reasoning is never sent back.
func (c *Client) buildRequest(req Request) openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{
		Model:               c.cfg.Model,
		MaxCompletionTokens: c.cfg.MaxCompletionTokens,
		Stream:              true,
		Messages:            make([]openai.ChatCompletionMessage, 0, len(req.Messages)),
	}
	if !c.cfg.NoStreamUsage {
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
		if m.Role == RoleUser && len(m.Images) > 0 {
			// The text, then each image as an image_url part with a data URL.
			om.Content = ""
			if m.Content != "" {
				om.MultiContent = append(om.MultiContent, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: m.Content})
			}
			for _, img := range m.Images {
				om.MultiContent = append(om.MultiContent, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
					ImageURL: &openai.ChatMessageImageURL{URL: img.DataURL()}})
			}
		}
		switch m.Role {
		case RoleTool:
			om.ToolCallID = m.ToolCallID
			if strings.TrimSpace(m.Content) == "" {
				om.Content = EmptyToolResult
			}
		case RoleAssistant:
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
					ID: tc.ID, Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: tc.Name, Arguments: args},
				})
			}
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	return out
}

// maxModelsBytes bounds the answer of the model list.
const maxModelsBytes = 4 << 20

// Models lists the model service's models (GET {baseURL}/models), sorted
// and without duplicates, through the same transport as Complete: the key,
// the base URL's query and the redaction of failed URLs are the same.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	info := &attemptInfo{maxBody: maxModelsBytes}
	list, err := c.api.ListModels(context.WithValue(ctx, attemptKey{}, info))
	if err != nil {
		return nil, fmt.Errorf("model list: %w", err)
	}
	out := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		if m.ID != "" {
			out = append(out, m.ID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
