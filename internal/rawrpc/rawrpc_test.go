package rawrpc

import (
	"encoding/json"
	"io"
	"testing"
)

// pair connects two Conns back to back over pipes; b answers every
// request with its params.
func pair(t *testing.T, f Framing) (a, b *Conn) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	a = New(t, ar, aw, Options{Framing: f})
	b = New(t, br, bw, Options{Framing: f, OnRequest: func(c *Conn, req Message) { c.Answer(req.ID, req.Params) }})
	t.Cleanup(func() { aw.Close(); bw.Close() })
	return a, b
}

// TestBothFramingsCarryRequestsRepliesAndNotifications: in either framing
// a request gets its own reply (answered by the other side's OnRequest),
// replies to requests sent together reach their own callers, and the
// other side sees every message in order.
func TestBothFramingsCarryRequestsRepliesAndNotifications(t *testing.T) {
	for name, f := range map[string]Framing{"lines": Lines, "content-length": ContentLength} {
		t.Run(name, func(t *testing.T) {
			a, b := pair(t, f)
			r := a.Call("echo", map[string]any{"text": "héllo\nworld"})
			var got struct{ Text string }
			if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || got.Text != "héllo\nworld" {
				t.Fatalf("echo = %s %+v; want the params back", r.Result, r.Error)
			}
			id1, ch1 := a.Start("echo", 1)
			id2, ch2 := a.Start("echo", 2)
			if id1 == id2 {
				t.Fatalf("two requests got the same id %d", id1)
			}
			if r1, r2 := <-ch2, <-ch1; string(r1.Result) != "2" || string(r2.Result) != "1" || r1.At.IsZero() {
				t.Errorf("replies %s, %s (read at %v); want each request its own", r1.Result, r2.Result, r1.At)
			}
			a.Notify("note", []int{7})
			m := b.WaitFor("the notification", func(m Message) bool { return m.Method == "note" })
			if len(m.ID) != 0 || string(m.Params) != "[7]" {
				t.Errorf("notification %+v; want no id and params [7]", m)
			}
			var methods []string
			for _, m := range b.Seen() {
				methods = append(methods, m.Method)
			}
			if want := `["echo","echo","echo","note"]`; toJSON(methods) != want {
				t.Errorf("the other side saw %s; want %s", toJSON(methods), want)
			}
		})
	}
}

// TestEndClosesPendingReplies: a request waiting when the other side's
// output ends, or sent after, gets its channel closed; Done is closed.
func TestEndClosesPendingReplies(t *testing.T) {
	ar, bw := io.Pipe()
	sink, aw := io.Pipe()
	go func() { _, _ = io.Copy(io.Discard, sink) }()
	a := New(t, ar, aw, Options{})
	_, ch := a.Start("never answered", nil)
	bw.Close()
	if _, ok := <-ch; ok {
		t.Error("a reply came on a request nobody answered")
	}
	<-a.Done()
	if _, ok := <-func() <-chan Reply { _, ch := a.Start("sent after the end", nil); return ch }(); ok {
		t.Error("a reply came on a request sent after the end")
	}
	aw.Close()
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
