package lsptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// GarbageFrame is one malformed (or hostile) frame and the reply the server
// owes it.
type GarbageFrame struct {
	Kind  string
	Bytes []byte
	// Reply says whether an error reply is owed; ID is its id ("" for null).
	Reply bool
	ID    string
}

// GarbageFrames returns n malformed frames of many kinds (bad
// Content-Length, invalid JSON, wrong types, batches, unknown methods,
// bad params), deterministically from seed. Request ids are "g<i>" strings
// or integers from 100000 on, so they never clash with a client's own.
// The last frame never declares more bytes than it has.
func GarbageFrames(seed uint64, n int) []GarbageFrame {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	frames := make([]GarbageFrame, 0, n)
	needHeader := false
	for i := range n {
		idJSON, idName := fmt.Sprintf(`"g%d"`, i), fmt.Sprintf("g%d", i)
		if i%2 == 1 {
			idJSON, idName = fmt.Sprint(100000+i), fmt.Sprint(100000+i)
		}
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"workspace/executeCommand","params":{"command":"x","arguments":[]}}`, idJSON)
		kinds := 17
		if i == n-1 {
			kinds = 16 // not "Content-Length too long": nothing would follow to fill it
		}
		k := r.IntN(kinds)
		if needHeader {
			// The frame before read too little or too much: the next one must
			// start with its Content-Length header for the count to be exact.
			for k == 2 || k == 14 {
				k = r.IntN(kinds)
			}
		}
		needHeader = k == 13 || k == 16
		var f GarbageFrame
		switch k {
		case 0:
			f = GarbageFrame{"non-numeric Content-Length", []byte("Content-Length: abc\r\n\r\n" + req), true, idName}
		case 1:
			f = GarbageFrame{"negative Content-Length", []byte("Content-Length: -5\r\n\r\n" + req), true, idName}
		case 2:
			f = GarbageFrame{"missing Content-Length", []byte("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + req), true, idName}
		case 3:
			f = GarbageFrame{"huge Content-Length", []byte("Content-Length: 99999999999999999999\r\n\r\n" + req), true, idName}
		case 4:
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":`, idJSON)
			f = GarbageFrame{"truncated JSON", frame(body), true, ""}
		case 5:
			f = GarbageFrame{"method is a number", frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":5}`, idJSON)), true, idName}
		case 6:
			f = GarbageFrame{"id is an object", frame(`{"jsonrpc":"2.0","id":{"x":1},"method":"shutdown"}`), true, ""}
		case 7:
			f = GarbageFrame{"wrong jsonrpc version", frame(fmt.Sprintf(`{"jsonrpc":"1.0","id":%s,"method":"shutdown"}`, idJSON)), true, idName}
		case 8:
			f = GarbageFrame{"params of the wrong type", frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"workspace/executeCommand","params":{"command":42}}`, idJSON)), true, idName}
		case 9:
			f = GarbageFrame{"unknown method", frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"no/such/method","params":{}}`, idJSON)), true, idName}
		case 10:
			f = GarbageFrame{"batch", frame(`[{"jsonrpc":"2.0","id":1,"method":"shutdown"},{"jsonrpc":"2.0","id":2,"method":"shutdown"}]`), true, ""}
		case 11:
			f = GarbageFrame{"not an object", frame([]string{`"hello"`, `42`, `null`, `true`}[r.IntN(4)]), true, ""}
		case 12:
			f = GarbageFrame{"notification with bad params", frame(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":7}}`), false, ""}
		case 13:
			f = GarbageFrame{"Content-Length too short", []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", 10, req)), true, ""}
		case 14:
			f = GarbageFrame{"junk line", []byte("GARBAGE " + strings.Repeat("x", r.IntN(50)) + "\r\n"), true, ""}
		case 15:
			f = GarbageFrame{"invalid UTF-8 and control bytes", frame("{\"jsonrpc\":\"2.0\",\"id\":" + idJSON + ",\"method\":\"\xff\xfe\"}"), true, idName}
		case 16:
			f = GarbageFrame{"Content-Length too long", []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(req)+25, req)), true, idName}
		}
		frames = append(frames, f)
	}
	return frames
}

func frame(body string) []byte {
	return []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
}

// ReplayGarbage drives a server over raw bytes: it writes an initialize
// request, the frames and a final shutdown request (id "final") to w, and
// reads r until every reply the frames are owed and the shutdown reply have
// arrived. It returns an error naming missing, unexpected or wrong replies.
// Reading continues in the background until r ends.
func ReplayGarbage(w io.Writer, r io.Reader, frames []GarbageFrame, timeout time.Duration) error {
	replies := make(chan *jsonrpc2.Response, 1024)
	go func() {
		defer close(replies)
		st := jsonrpc2.NewHeaderStream(readOnly{r})
		for {
			msg, _, err := st.Read(context.Background())
			if err != nil {
				return
			}
			if resp, ok := msg.(*jsonrpc2.Response); ok {
				replies <- resp
			}
		}
	}()
	writeErr := make(chan error, 1)
	go func() {
		var buf bytes.Buffer
		buf.Write(frame(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}`))
		buf.Write(frame(`{"jsonrpc":"2.0","method":"initialized","params":{}}`))
		for _, f := range frames {
			buf.Write(f.Bytes)
		}
		buf.Write(frame(`{"jsonrpc":"2.0","id":"final","method":"shutdown"}`))
		_, err := w.Write(buf.Bytes())
		writeErr <- err
	}()

	owed := map[string]bool{}
	nulls := 0
	for _, f := range frames {
		if f.Reply && f.ID != "" {
			owed[f.ID] = true
		} else if f.Reply {
			nulls++
		}
	}
	deadline := time.After(timeout)
	var problems []string
	gotNulls, final, initOK := 0, false, false
	for !final || len(owed) > 0 {
		select {
		case resp, ok := <-replies:
			if !ok {
				return fmt.Errorf("connection ended early; still owed %d replies (final seen: %v)", len(owed), final)
			}
			id := idName(resp.ID())
			switch {
			case id == "init":
				initOK = resp.Err() == nil
			case id == "final":
				final = true
				if resp.Err() != nil {
					problems = append(problems, fmt.Sprintf("shutdown failed: %v", resp.Err()))
				}
				if gotNulls != nulls {
					problems = append(problems, fmt.Sprintf("%d replies with a null id; want %d", gotNulls, nulls))
				}
			case id == "":
				gotNulls++
				if resp.Err() == nil {
					problems = append(problems, "a null-id reply without an error")
				}
			case owed[id]:
				delete(owed, id)
				if resp.Err() == nil {
					problems = append(problems, fmt.Sprintf("reply %s is not an error", id))
				}
			default:
				problems = append(problems, fmt.Sprintf("unexpected reply with id %s: %v", id, resp.Err()))
			}
		case err := <-writeErr:
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
			writeErr = nil
		case <-deadline:
			missing := make([]string, 0, len(owed))
			for id := range owed {
				missing = append(missing, id)
			}
			return fmt.Errorf("timed out: %d replies missing (%v), final seen %v, problems %v", len(owed), missing, final, problems)
		}
	}
	if !initOK {
		problems = append(problems, "initialize failed")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func idName(id jsonrpc2.ID) string {
	if n, ok := id.Number(); ok {
		return fmt.Sprint(n)
	}
	if s, ok := id.StringValue(); ok {
		return s
	}
	return ""
}

type readOnly struct{ io.Reader }

func (readOnly) Write(p []byte) (int, error) { return len(p), nil }
func (readOnly) Close() error                { return nil }
