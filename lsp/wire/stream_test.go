package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

// pipeRW is a byte source for the stream and a buffer for its writes.
type pipeRW struct {
	io.Reader
	out bytes.Buffer
}

func (p *pipeRW) Write(b []byte) (int, error) { return p.out.Write(b) }
func (p *pipeRW) Close() error                { return nil }

func frame(body string) string {
	return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

// TestOversizedMessagesFailCleanly: a frame over the limit is read
// through and discarded; a response becomes an error response to its
// request (id found wherever it stands, number or string), a request is
// answered with the error, a notification is dropped; the next frame is
// read as usual.
func TestOversizedMessagesFailCleanly(t *testing.T) {
	const limit = 1 << 10
	big := strings.Repeat("x", 10*limit)
	for _, tc := range []struct {
		name      string
		body      string
		wantResp  string // the id of the error response Read returns
		wantReply string // the id of the error reply written back
	}{
		{"response, id first", `{"jsonrpc":"2.0","id":7,"result":{"contents":"` + big + `"}}`, "7", ""},
		{"response, id last", `{"jsonrpc":"2.0","result":[{"uri":"file:///a","text":"` + big + `","id":99}],"id":8}`, "8", ""},
		{"response, string id", `{"result":"` + big + `", "id" : "abc\"d"}`, `"abc\"d"`, ""},
		{"request", `{"jsonrpc":"2.0","id":3,"method":"workspace/applyEdit","params":{"x":"` + big + `"}}`, "", "3"},
		{"notification", `{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"x":"` + big + `"}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := `{"jsonrpc":"2.0","method":"after","params":{}}`
			rw := &pipeRW{Reader: strings.NewReader(frame(tc.body) + frame(next))}
			s := NewStream(rw, slog.New(slog.DiscardHandler), nil).SetMaxMessage(limit)
			msg, _, err := s.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantResp != "" {
				r, ok := msg.(*jsonrpc2.Response)
				if !ok {
					t.Fatalf("first message is %T; want the error response", msg)
				}
				var e *jsonrpc2.Error
				if !errors.As(r.Err(), &e) || e.Code != CodeTooLarge || !strings.Contains(e.Message, "exceeds the limit of 1024 bytes") {
					t.Errorf("error = %v; want CodeTooLarge naming the limit", r.Err())
				}
				if got := fmt.Sprint(r.ID()); !strings.Contains(got, strings.Trim(tc.wantResp, `"`)[:1]) {
					t.Errorf("id = %s; want %s", got, tc.wantResp)
				}
				if msg, _, err = s.Read(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if n, ok := msg.(*jsonrpc2.Notification); !ok || n.Method() != "after" {
				t.Fatalf("message after the oversized one = %#v; want the notification that followed", msg)
			}
			written := rw.out.String()
			if tc.wantReply == "" && written != "" {
				t.Errorf("wrote %q; want nothing", written)
			}
			if tc.wantReply != "" && (!strings.Contains(written, `"id":`+tc.wantReply) || !strings.Contains(written, "exceeds the limit")) {
				t.Errorf("reply %q; want an error for id %s", written, tc.wantReply)
			}
		})
	}
}

// TestScannerFindsTheID: the scanner finds the top-level id across piece
// boundaries and ignores ids nested deeper.
func TestScannerFindsTheID(t *testing.T) {
	for body, want := range map[string]string{
		`{"result":{"id":5},"id":6}`:                   "6",
		`{"id":"s,1","result":null}`:                   "s,1",
		`{"result":[{"id":1}]}`:                        "",
		`{"id":{"x":1},"result":null}`:                 "",
		`{"id":null,"error":{"code":1}}`:               "",
		`{"result":{"a":"x\\\"}\\\\","id":0},"id":12}`: "12",
	} {
		var sc, whole topScanner
		for i := range len(body) {
			sc.feed([]byte{body[i]})
		}
		whole.feed([]byte(body))
		if a, b := fmt.Sprint(sc.id()), fmt.Sprint(whole.id()); a != b {
			t.Errorf("%s: id %s fed byte by byte, %s whole", body, a, b)
		}
		id, ok := sc.id()
		got := ""
		if ok {
			got = strings.Trim(fmt.Sprint(id), `"#`)
		}
		if !strings.Contains(got, want) || (want == "" && ok) {
			t.Errorf("%s: id = %q (%v); want %q", body, got, ok, want)
		}
	}
}

// BenchmarkDiscardOversized: the rate at which a message over the limit
// is read through (the cost of a flood to the reading goroutine).
func BenchmarkDiscardOversized(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":1,"result":[` + strings.Repeat(`{"uri":"file:///a/b.go","range":{"start":{"line":5,"character":5},"end":{"line":5,"character":10}}},`, 200000) + `{}]}`
	in := frame(body)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		s := NewStream(&pipeRW{Reader: strings.NewReader(in)}, slog.New(slog.DiscardHandler), nil).SetMaxMessage(1 << 20)
		if _, _, err := s.Read(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
