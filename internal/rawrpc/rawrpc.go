// Package rawrpc is a JSON-RPC 2.0 peer written by hand for tests that
// speak a protocol's wire themselves, not through the library the product
// uses: ACP's lines of JSON or LSP's Content-Length frames over real
// pipes. It numbers the requests it sends and hands each its reply, keeps
// every message the other side sent in order, and answers the other
// side's requests as the test says.
package rawrpc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Framing is how messages are delimited on the wire.
type Framing int

const (
	// Lines is a message a line (ACP).
	Lines Framing = iota
	// ContentLength is LSP's base protocol: a Content-Length header, a
	// blank line, then the body.
	ContentLength
)

// Message is any JSON-RPC message, its members left raw.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Error is the error member of a reply.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Reply is the reply to a request this side sent, with the time it was
// read off the wire.
type Reply struct {
	Message
	At time.Time
}

// Options say how a Conn speaks.
type Options struct {
	Framing Framing
	// OnRequest is called on the reading goroutine with each request the
	// other side sends, once it is recorded; it answers with Conn.Answer or
	// leaves the request unanswered. Nil leaves every request unanswered.
	OnRequest func(c *Conn, req Message)
	// Timeout bounds the wait of Call, Await and WaitFor: 60 s when zero.
	Timeout time.Duration
}

// Conn is one side of a JSON-RPC connection. Its methods may be called
// from any goroutine; those that fail the test (Call, Await, WaitFor,
// Start with params that do not marshal) only from the test's own.
type Conn struct {
	t    testing.TB
	o    Options
	wmu  sync.Mutex // guards w: one message written at a time
	w    io.Writer
	done chan struct{} // closed when the other side's output ends

	mu   sync.Mutex // guards the fields below
	cond *sync.Cond // broadcast on each message read and at the end
	next int
	wait map[string]chan Reply // by the request's id as JSON
	seen []Message
}

// New speaks JSON-RPC to the other side: it writes to w and reads r until
// r ends, on a goroutine of its own.
func New(t testing.TB, r io.Reader, w io.Writer, o Options) *Conn {
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	c := &Conn{t: t, o: o, w: w, done: make(chan struct{}), wait: map[string]chan Reply{}}
	c.cond = sync.NewCond(&c.mu)
	go c.read(r)
	return c
}

func (c *Conn) read(r io.Reader) {
	defer func() {
		c.mu.Lock()
		for _, ch := range c.wait {
			close(ch)
		}
		c.wait = map[string]chan Reply{}
		close(c.done)
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	next := lines(r)
	if c.o.Framing == ContentLength {
		next = frames(r)
	}
	for {
		body, ok := next()
		if !ok {
			return
		}
		at := time.Now()
		var m Message
		if err := json.Unmarshal(body, &m); err != nil {
			c.t.Errorf("the other side wrote a message that is not JSON: %q", body)
			continue
		}
		c.mu.Lock()
		c.seen = append(c.seen, m)
		c.cond.Broadcast()
		var ch chan Reply
		if m.Method == "" {
			ch = c.wait[string(m.ID)]
			delete(c.wait, string(m.ID))
		}
		c.mu.Unlock()
		switch {
		case ch != nil:
			ch <- Reply{m, at}
		case m.Method != "" && len(m.ID) > 0 && c.o.OnRequest != nil:
			c.o.OnRequest(c, m)
		}
	}
}

// lines reads a message a line.
func lines(r io.Reader) func() ([]byte, bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return func() ([]byte, bool) {
		if !sc.Scan() {
			return nil, false
		}
		return sc.Bytes(), true
	}
}

// frames reads Content-Length frames.
func frames(r io.Reader) func() ([]byte, bool) {
	br := bufio.NewReader(r)
	return func() ([]byte, bool) {
		n := -1
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return nil, false
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				n, _ = strconv.Atoi(v)
			}
		}
		if n < 0 {
			return nil, false
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, false
		}
		return body, true
	}
}

// Send writes raw, the text of one message, framed.
func (c *Conn) Send(raw string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var err error
	if c.o.Framing == ContentLength {
		_, err = fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(raw), raw)
	} else {
		_, err = io.WriteString(c.w, raw+"\n")
	}
	if err != nil {
		c.t.Errorf("write: %v", err)
	}
}

// Start sends a request and returns its id and the channel its reply
// comes on (closed without one when the other side's output ends).
func (c *Conn) Start(method string, params any) (id int, reply <-chan Reply) {
	b, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	m, _ := json.Marshal(method)
	ch := make(chan Reply, 1)
	c.mu.Lock()
	c.next++
	id = c.next
	select {
	case <-c.done: // nothing will come
		close(ch)
	default:
		c.wait[strconv.Itoa(id)] = ch
	}
	c.mu.Unlock()
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}`, id, m, b))
	return id, ch
}

// Await waits for the reply on ch; what names it in a failure.
func (c *Conn) Await(what string, ch <-chan Reply) Message {
	c.t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			c.t.Fatalf("%s: the other side closed its output", what)
		}
		return r.Message
	case <-time.After(c.o.Timeout):
		c.t.Fatalf("%s: no reply within %v", what, c.o.Timeout)
	}
	return Message{}
}

// Call sends a request and waits for its reply.
func (c *Conn) Call(method string, params any) Message {
	c.t.Helper()
	_, ch := c.Start(method, params)
	return c.Await(method, ch)
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		c.t.Errorf("notification %s: %v", method, err)
		return
	}
	c.Send(string(b))
}

// Answer answers the other side's request id with result.
func (c *Conn) Answer(id json.RawMessage, result any) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	if err != nil {
		c.t.Errorf("reply to %s: %v", id, err)
		return
	}
	c.Send(string(b))
}

// Seen is every message the other side sent so far, in order.
func (c *Conn) Seen() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.seen...)
}

// WaitFor waits until a message the other side sent satisfies f, and
// returns the first that does; what names it in a failure.
func (c *Conn) WaitFor(what string, f func(Message) bool) Message {
	c.t.Helper()
	timer := time.AfterFunc(c.o.Timeout, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(c.o.Timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; ; {
		for ; i < len(c.seen); i++ {
			if f(c.seen[i]) {
				return c.seen[i]
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		select {
		case <-c.done:
			c.t.Fatalf("waiting for %s: the other side closed its output", what)
		default:
		}
		c.cond.Wait()
	}
}

// Done is closed when the other side's output has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }
