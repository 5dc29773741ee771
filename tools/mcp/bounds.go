package mcp

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
)

// The bounds on what an MCP server sends, applied at the reader before
// anything is parsed (docs/security.md, "Outside programs are bounded at
// the reader").
const (
	// MaxMessageBytes bounds one message of a server: a stdio line, an
	// HTTP response body, one server-sent event. A server that sends more
	// has its connection ended (it starts again on the next call) and the
	// call fails with an error that says so.
	MaxMessageBytes = 8 << 20
	// MaxTools bounds the tools taken from one server; the rest are not
	// offered, with a note the user sees.
	MaxTools = 100
	// maxSchema bounds one tool's input schema (JSON): every request
	// carries it.
	maxSchema = 16 << 10
)

// overLimit records that a server's connection sent more than a bound
// allows; the error that ends the connection says so.
type overLimit struct{ what atomic.Pointer[string] }

func (o *overLimit) trip(what string) error {
	o.what.CompareAndSwap(nil, &what)
	return fmt.Errorf("%s: %w", what, errTooLarge)
}

// why is what went over the limit, "" when nothing did.
func (o *overLimit) why() string {
	if p := o.what.Load(); p != nil {
		return *p
	}
	return ""
}

var errTooLarge = fmt.Errorf("over the limit of %d bytes", MaxMessageBytes)

// lineLimit bounds the lines read through it (stdio's newline-delimited
// messages) to max bytes each: a longer one is an error before the SDK's
// decoder holds it.
type lineLimit struct {
	r    io.Reader
	max  int
	line int // bytes since the last newline
	over *overLimit
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l.line += len(rest)
			break
		}
		l.line += i
		if l.line > l.max {
			break
		}
		l.line = 0
		rest = rest[i+1:]
	}
	if l.line > l.max {
		return 0, l.over.trip(fmt.Sprintf("a message of more than %d bytes", l.max))
	}
	return n, err
}

// limitBodies bounds the response bodies of an HTTP server: a JSON body
// to max bytes in all, an event stream to max bytes per event.
type limitBodies struct {
	next http.RoundTripper
	max  int
	over *overLimit
}

func (t limitBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > int64(t.max) {
		resp.Body.Close()
		return nil, t.over.trip(fmt.Sprintf("a response of %d bytes", resp.ContentLength))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &bodyLimit{ReadCloser: resp.Body, max: t.max, events: mt == "text/event-stream", over: t.over}
	return resp, nil
}

// bodyLimit fails a body once it passes max bytes (an event stream: once
// one event does).
type bodyLimit struct {
	io.ReadCloser
	max    int
	events bool
	n      int  // bytes of the body, or of the current event
	nl     bool // the last byte was a newline (an event ends at a blank line)
	over   *overLimit
}

func (b *bodyLimit) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.events {
		b.n += n
	} else {
		for _, c := range p[:n] {
			switch {
			case c == '\r':
			case c == '\n' && b.nl:
				b.n = 0 // a blank line: the event ended
			case c == '\n':
				b.nl = true
				b.n++
			default:
				b.nl = false
				b.n++
			}
		}
	}
	if b.n > b.max {
		what := fmt.Sprintf("a response body of more than %d bytes", b.max)
		if b.events {
			what = fmt.Sprintf("an event of more than %d bytes", b.max)
		}
		return 0, b.over.trip(what)
	}
	return n, err
}
