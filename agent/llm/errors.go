package llm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentls/agentls/agent/redact"
)

// ErrorKind classifies a failed model call.
type ErrorKind string

const (
	KindAuth          ErrorKind = "auth"           // 401: the key was rejected
	KindForbidden     ErrorKind = "forbidden"      // 403
	KindNotFound      ErrorKind = "not_found"      // 404: model or endpoint unknown
	KindInvalid       ErrorKind = "invalid"        // 400, 413, 422: the request was refused
	KindContextLength ErrorKind = "context_length" // the conversation exceeds the context window
	KindQuota         ErrorKind = "quota"          // 429 insufficient_quota: no credit left
	KindTransient     ErrorKind = "transient"      // retried, and the attempts or the deadline ran out
	KindDeadline      ErrorKind = "deadline"       // the total deadline passed
	KindProtocol      ErrorKind = "protocol"       // an answer the client cannot use
	KindTooLarge      ErrorKind = "too_large"      // the answer exceeded one of agentls's size limits
	KindImages        ErrorKind = "images"         // a request with an image was refused: the model may not take images
)

// Error is a failed model call. Its message says what failed and what to do.
type Error struct {
	Kind     ErrorKind
	Status   int    // HTTP status of the last attempt, 0 for transport errors
	Code     string // the service's error code, e.g. "insufficient_quota"
	Attempts int    // attempts made
	Hint     string // what to fix, for people
	Err      error  // the underlying error (its text has the API key removed)
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Hint)
	if e.Err != nil {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Permanent reports an error that retrying cannot fix.
func (e *Error) Permanent() bool {
	return e.Kind != KindTransient && e.Kind != KindDeadline
}

// redactedError hides a secret in an error's text but keeps the chain.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr hides the secrets (and secrets of a known shape) in err's
// text, keeping the chain.
func redactErr(err error, secrets ...string) error {
	if err == nil {
		return err
	}
	msg := redact.New(secrets...).String(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// errStreamBroken marks a stream that ended before the model finished.
var errStreamBroken = errors.New("the stream ended before the answer was complete")

// tooLargeError is an answer over one of the client's size limits. It is
// permanent: the same request would stream the same answer again.
type tooLargeError struct {
	what  string
	limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the model's %s exceeded agentls's limit of %s", e.what, humanBytes(e.limit))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// errStalled marks an attempt that exceeded Config.Timeout of silence.
var errStalled = errors.New("no data from the model service within the timeout")

// failure is one classified failed attempt.
type failure struct {
	err       error
	status    int
	code      string
	transient bool
	kind      ErrorKind
	hint      string
}

// classify sorts one attempt's error into transient or permanent, with a
// message that says what to fix.
func (c *Client) classify(err error) failure {
	f := failure{err: err}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		f.status = apiErr.HTTPStatusCode
		f.code = codeString(apiErr.Code)
		if f.code == "" {
			f.code = apiErr.Type
		}
		if f.status == 0 { // an error event inside the stream
			f.transient = f.code != "insufficient_quota"
			if !f.transient {
				f.kind, f.hint = KindQuota, c.quotaHint()
			}
			if f.transient {
				f.hint = "the model service reported an error inside the stream"
			}
			return f
		}
		f.err = fmt.Errorf("%s", strings.TrimSpace(apiErr.Message))
	case errors.As(err, &reqErr):
		f.status = reqErr.HTTPStatusCode
		f.err = fmt.Errorf("%s", bodySnippet(reqErr.Body))
	case errors.As(err, new(*tooLargeError)):
		f.kind, f.hint = KindTooLarge, err.Error()+": the model service streamed more than any answer needs (ask for less, or lower maxCompletionTokens)"
		return f
	case errors.Is(err, errStalled):
		f.transient, f.hint = true, fmt.Sprintf("the model service was silent for %s", c.cfg.Timeout)
		return f
	case errors.Is(err, errStreamBroken), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, openai.ErrTooManyEmptyStreamMessages), errors.Is(err, errBadChunk):
		f.transient, f.hint = true, "the answer stream broke"
		return f
	case errors.Is(err, syscall.ECONNREFUSED):
		f.transient, f.hint = true, fmt.Sprintf("cannot connect to %s (is the server running?)", redactURL(c.cfg.BaseURL))
		return f
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		f.transient, f.hint = true, "the connection was reset"
		return f
	default:
		var netErr net.Error
		var urlErr *url.Error
		if errors.As(err, &netErr) || errors.As(err, &urlErr) {
			f.transient, f.hint = true, "network error"
			return f
		}
		f.kind, f.hint = KindProtocol, "the request could not be made"
		return f
	}
	c.classifyStatus(&f)
	return f
}

// classifyStatus fills in kind, hint and transient from an HTTP status.
func (c *Client) classifyStatus(f *failure) {
	lower := strings.ToLower(f.err.Error())
	switch f.status {
	case 408, 409, 425, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529:
		f.transient, f.hint = true, fmt.Sprintf("the model service is unavailable (%d)", f.status)
	case 429:
		if f.code == "insufficient_quota" || strings.Contains(lower, "quota") || strings.Contains(lower, "billing") {
			f.kind, f.hint = KindQuota, c.quotaHint()
			return
		}
		f.transient, f.hint = true, "rate limited (429)"
	case 401:
		f.kind, f.hint = KindAuth, fmt.Sprintf("the API key was rejected (401): set %s or agentls.apiKeyEnv to a valid key", c.cfg.APIKeyEnv)
	case 403:
		f.kind, f.hint = KindForbidden, fmt.Sprintf("access denied (403): the key may not use model %q or this endpoint; check the key's project and permissions", c.cfg.Model)
	case 404:
		f.kind, f.hint = KindNotFound, fmt.Sprintf("model %q or the chat endpoint was not found at %s (404): check agentls.model / AGENTLS_MODEL and that the base URL ends in /v1", c.cfg.Model, redactURL(c.cfg.BaseURL))
	default:
		if f.code == "context_length_exceeded" || strings.Contains(lower, "context length") || strings.Contains(lower, "context window") || strings.Contains(lower, "maximum context") {
			f.kind, f.hint = KindContextLength, fmt.Sprintf("the conversation is longer than the context window of %q (%d): compact the history or raise the server's context size", c.cfg.Model, f.status)
			return
		}
		if f.status >= 500 {
			f.transient, f.hint = true, fmt.Sprintf("the model service failed (%d)", f.status)
			return
		}
		f.kind, f.hint = KindInvalid, fmt.Sprintf("the model service refused the request (%d): check the model options (agentls.maxCompletionTokens, temperature, extraBody)", f.status)
	}
}

func (c *Client) quotaHint() string {
	return "the account's quota is exhausted (429 insufficient_quota): add credit or raise the limit, or use another key"
}

func codeString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// bodySnippet makes a short readable text of an error body (HTML pages
// included).
func bodySnippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "<") {
		// crude tag strip: enough for "502 Bad Gateway" pages
		var out strings.Builder
		in := false
		for _, r := range s {
			switch {
			case r == '<':
				in = true
				out.WriteByte(' ')
			case r == '>':
				in = false
			case !in:
				out.WriteRune(r)
			}
		}
		s = strings.Join(strings.Fields(out.String()), " ")
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	if s == "" {
		s = "empty body"
	}
	return s
}
