package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
)

// The SDK drops a line it cannot parse without a word to the client; the
// protocol (JSON-RPC 2.0) answers it with -32700. Lines pass through a
// filter that answers those itself and hands the SDK only JSON objects.

// maxLine is the longest line the filter passes on: the SDK's own limit.
const maxLine = 10 << 20

// lockedWriter serialises whole writes: the SDK writes one message per
// Write, and the filter's error replies go between them, never inside.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	// patch, when set, may rewrite each message before it is written
	// (ext.go: what the SDK's types cannot carry).
	patch func([]byte) []byte
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	n := len(p)
	if l.patch != nil {
		p = l.patch(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// errorReply is a JSON-RPC error response to a request whose id is
// unknown (null).
func errorReply(code int, message string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
	return append(b, '\n')
}

// filterLines returns a reader of the lines of r that are JSON objects;
// every other non-blank line is answered on w (-32700 for a line that is
// not JSON, -32600 for JSON that is not a request object, or a line over
// maxLine) and dropped.
//
// seen is called with the method, the id and the line of each request or
// notification, before the SDK reads it: the order messages arrived in,
// which the SDK's concurrent handlers do not keep. When it returns true it
// has handled the message itself (ext.go), which the SDK then never sees.
func filterLines(r io.Reader, w io.Writer, log *slog.Logger, seen func(method string, id json.RawMessage, line []byte) bool) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, tooLong, err := readLine(br)
			if tooLong {
				log.Warn("acp: a message over the line limit was dropped", "limit", maxLine)
				_, _ = w.Write(errorReply(-32600, "Invalid Request: the message is longer than 10 MiB"))
			} else if t := bytes.TrimSpace(line); len(t) > 0 {
				switch {
				case !json.Valid(t):
					log.Warn("acp: a line that is not JSON was answered with a parse error", "bytes", len(t))
					_, _ = w.Write(errorReply(-32700, "Parse error: each line must be one JSON-RPC message"))
				case t[0] != '{':
					_, _ = w.Write(errorReply(-32600, "Invalid Request: a message must be a JSON object (batches are not supported)"))
				default:
					var m struct {
						Method string          `json:"method"`
						ID     json.RawMessage `json:"id"`
					}
					if json.Unmarshal(t, &m) == nil && m.Method != "" && seen != nil && seen(m.Method, m.ID, t) {
						break
					}
					if _, werr := pw.Write(append(t, '\n')); werr != nil {
						return
					}
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// readLine reads one line (without its newline); tooLong when it was over
// maxLine, in which case the rest of it was skipped.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > maxLine {
				tooLong, buf = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(buf, []byte("\n")), tooLong, err
	}
}
