package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentls/agentls/agent/redact"
)

// attemptKey carries an *attemptInfo in a request's context from the client
// to its transport.
type attemptKey struct{}

// attemptInfo is what the transport saw of one attempt. go-openai calls
// transport.Do and reads the body on the caller's goroutine, so it needs no
// lock.
type attemptInfo struct {
	body    []byte      // request body as sent
	status  int         // response status, 0 when none came
	header  http.Header // response headers (Retry-After)
	tail    []byte      // the last bytes of the response body read so far
	read    int64       // bytes of the response body read so far
	maxBody int64       // the most body bytes read before the answer is refused; 0 means no limit
}

// sawDone reports whether the stream's last bytes held the [DONE] marker.
func (a *attemptInfo) sawDone() bool { return bytes.Contains(a.tail, []byte("[DONE]")) }

// transport is the HTTPDoer given to go-openai. It rewrites the request body
// (temperature including 0, extra fields, a fixed key order so the prefix is
// byte-stable: model, tools, messages first) and captures what go-openai
// hides: status, headers and the end of the stream.
type transport struct {
	hc        *http.Client
	overrides map[string][]byte // top-level fields set by configuration
	extraKeys []string          // overrides in the order they are appended
	query     url.Values        // the base URL's query, added to every request
}

func newTransport(hc *http.Client, cfg Config) (*transport, error) {
	t := &transport{hc: hc, overrides: map[string][]byte{}}
	if cfg.Temperature != nil {
		t.overrides["temperature"] = []byte(strconv.FormatFloat(*cfg.Temperature, 'g', -1, 64))
	}
	keys := make([]string, 0, len(cfg.ExtraBody))
	for k := range cfg.ExtraBody {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(cfg.ExtraBody[k]) // map keys sorted: deterministic
		if err != nil {
			return nil, fmt.Errorf("extra body field %q: %w", k, err)
		}
		t.overrides[k] = v
	}
	if cfg.Temperature != nil {
		t.extraKeys = append(t.extraKeys, "temperature")
	}
	for _, k := range keys {
		if k != "temperature" {
			t.extraKeys = append(t.extraKeys, k)
		}
	}
	return t, nil
}

// Do implements openai.HTTPDoer.
func (t *transport) Do(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(attemptKey{}).(*attemptInfo)
	if req.Body != nil && req.Method == http.MethodPost {
		// go-openai sets the length: the body is read into one buffer of
		// its size, not grown (doubling) to it.
		var bb bytes.Buffer
		bb.Grow(int(max(req.ContentLength, 0)) + bytes.MinRead)
		_, err := bb.ReadFrom(req.Body)
		body := bb.Bytes()
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		body = t.rewrite(body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
		if info != nil {
			info.body = body
		}
	}
	if len(t.query) > 0 {
		q := req.URL.Query()
		for k, vs := range t.query {
			if !q.Has(k) {
				q[k] = vs
			}
		}
		req.URL.RawQuery = q.Encode()
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		// The URL of a failed request (Post "https://h/v1/...?key=X": ...)
		// reaches errors and logs: its query values and user information
		// are hidden.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL)
		}
		return nil, err
	}
	if info != nil {
		info.status = resp.StatusCode
		info.header = resp.Header
		resp.Body = &tailReader{ReadCloser: resp.Body, info: info}
	}
	return resp, nil
}

// rewrite orders the body's top-level fields (model, tools, messages, then
// the rest as go-openai wrote them) and applies the configured overrides.
// A body that is not a JSON object is returned unchanged.
//
// The fields are found as byte ranges of body, not decoded: a task's
// request holds its whole history, re-sent every turn, and decoding each
// field into its own copy (with the decoder's buffer, a third) was among
// the largest allocations of a searching server, whose collections the
// editor's requests wait on.
func (t *transport) rewrite(body []byte) []byte {
	type field struct {
		key string
		raw []byte
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return body
	}
	var fields []field
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return body
		}
		key := tok.String()        // a token is void after the next read
		start := dec.InputOffset() // just after the name: the ':' is read with the value
		if err := dec.SkipValue(); err != nil {
			return body
		}
		raw := bytes.TrimLeft(body[start:dec.InputOffset()], " \t\r\n:")
		fields = append(fields, field{key, raw})
	}
	out := make([]byte, 0, len(body)+64)
	out = append(out, '{')
	written := make(map[string]bool, len(fields)+len(t.overrides))
	write := func(k string, v []byte) {
		if written[k] {
			return
		}
		written[k] = true
		if len(out) > 1 {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(k)
		out = append(out, kb...)
		out = append(out, ':')
		if o, ok := t.overrides[k]; ok {
			v = o
		}
		out = append(out, v...)
	}
	for _, first := range []string{"model", "tools", "messages"} {
		for _, f := range fields {
			if f.key == first {
				write(f.key, f.raw)
			}
		}
	}
	for _, f := range fields {
		write(f.key, f.raw)
	}
	for _, k := range t.extraKeys {
		write(k, t.overrides[k])
	}
	return append(out, '}')
}

// tailReader keeps the last bytes read from a response body.
type tailReader struct {
	io.ReadCloser
	info *attemptInfo
}

const tailSize = 32

func (r *tailReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.info.read += int64(n)
	if max := r.info.maxBody; max > 0 && r.info.read > max {
		return 0, &tooLargeError{what: "streamed answer", limit: max}
	}
	if n > 0 {
		if n >= tailSize {
			r.info.tail = append(r.info.tail[:0], p[n-tailSize:n]...)
		} else {
			r.info.tail = append(r.info.tail, p[:n]...)
			if len(r.info.tail) > tailSize {
				r.info.tail = append(r.info.tail[:0], r.info.tail[len(r.info.tail)-tailSize:]...)
			}
		}
	}
	return n, err
}
