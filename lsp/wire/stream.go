// Package wire is the LSP connection's wire: "Content-Length" framing
// that survives garbage (Stream) and the payload codec that knows the
// protocol's union types (Codec). It knows nothing of the server.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

const (
	// DefaultMaxMessage bounds the body one frame may declare unless
	// SetMaxMessage says otherwise, so a hostile or broken peer cannot make
	// the reader allocate without limit.
	DefaultMaxMessage = 64 << 20
	// maxHeaderLine bounds one header line.
	maxHeaderLine = 8 << 10
	// maxHeaderLines bounds the lines of one header block.
	maxHeaderLines = 64
)

// errLineTooLong reports a header line longer than maxHeaderLine.
var errLineTooLong = errors.New("header line too long")

// Stream is a jsonrpc2.Stream with LSP "Content-Length" framing that survives
// garbage. jsonrpc2's own header stream ends the connection at the first bad
// header or undecodable body; this one answers such a frame with an error
// response (carrying the request's id when one can be recovered, else null)
// and goes on with the next frame. Only errors of the underlying reader end
// the stream.
//
// Read is called from the connection's read loop only; Write is safe for
// concurrent use.
type Stream struct {
	rwc io.ReadWriteCloser
	in  frameReader
	log *slog.Logger
	max int // the largest body read; larger ones are discarded unread

	wmu  sync.Mutex // guards wbuf and serializes writes so frames never interleave
	wbuf []byte

	// onReadEnd, when set, is called once with the error that ended reading
	// (io.EOF when the peer closed its end).
	onReadEnd func(error)
	endOnce   sync.Once
}

// NewStream frames rwc; onReadEnd (may be nil) learns why reading ended.
func NewStream(rwc io.ReadWriteCloser, log *slog.Logger, onReadEnd func(error)) *Stream {
	return &Stream{rwc: rwc, in: frameReader{src: rwc}, log: log, max: DefaultMaxMessage, onReadEnd: onReadEnd}
}

// SetMaxMessage bounds the body of one message to n bytes (before the
// first Read). A frame that declares more is never held in memory: its
// body is read through and discarded, and the message it carried fails
// cleanly (see Read).
func (s *Stream) SetMaxMessage(n int) *Stream {
	s.max = n
	return s
}

// CodeTooLarge is the error code of a message discarded for its size.
const CodeTooLarge jsonrpc2.Code = -32001

var _ jsonrpc2.Stream = (*Stream)(nil)

// Read implements jsonrpc2.Stream. It returns the next well-formed message;
// malformed frames are answered and skipped here. A frame over the size
// limit is read through without being kept (its top-level "id" and
// "method" are picked out on the way): a response becomes an error
// response (CodeTooLarge) to the request it answers, so the caller's
// request fails at once and the connection goes on; a request is answered
// with that error; a notification is dropped.
func (s *Stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		msg, n, bad, err := s.readFrame()
		if err != nil {
			s.endOnce.Do(func() {
				if s.onReadEnd != nil {
					s.onReadEnd(err)
				}
			})
			return nil, 0, err
		}
		if bad != nil {
			s.log.Warn("malformed message", "error", bad.err.Message, "id", bad.idString(), "replied", bad.reply)
			if bad.reply {
				if _, err := s.Write(ctx, jsonrpc2.NewResponse(bad.id, nil, bad.err)); err != nil {
					s.log.Warn("cannot answer malformed message", "error", err)
				}
			}
			continue
		}
		return msg, n, nil
	}
}

// badFrame describes a frame that is not a usable message.
type badFrame struct {
	id    jsonrpc2.ID // the request's id when it could be recovered, else the null id
	err   *jsonrpc2.Error
	reply bool // false for a malformed response, which must not be answered
}

func (b *badFrame) idString() string {
	if !b.id.IsValid() {
		return "null"
	}
	return fmt.Sprint(b.id)
}

// readFrame reads one frame. It returns either a message, a description of a
// bad frame, or a read error that ends the stream.
func (s *Stream) readFrame() (jsonrpc2.Message, int64, *badFrame, error) {
	length, headerLen, problem, err := s.readHeader()
	if err != nil {
		return nil, 0, nil, err
	}
	if problem.text == "" && length > s.max {
		return s.discardFrame(length, headerLen)
	}
	if problem.text != "" {
		if problem.junk {
			// A line that is no header at all: answer it alone; what follows
			// is read as the next frame.
			return nil, 0, &badFrame{err: jsonrpc2.NewError(jsonrpc2.ParseError, "invalid message header: "+problem.text), reply: true}, nil
		}
		return nil, 0, s.recoverFromBadHeader(problem), nil
	}
	raw, err := s.in.next(length)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, nil, err
	}
	body := bytes.Clone(raw) // decoded requests borrow the body: give them their own
	msg, derr := jsonrpc2.DecodeMessage(body)
	if derr == nil {
		return msg, int64(headerLen + length), nil, nil
	}
	if !json.Valid(body) {
		// A Content-Length longer than the real body swallows the next frame:
		// give back everything from the next header on.
		if k := indexFold(body[1:], "content-length:"); k >= 0 {
			s.in.unread(len(body) - (k + 1))
			body = body[:k+1]
		}
	}
	return nil, 0, classifyBadBody(body, derr), nil
}

// headerProblem describes a malformed header block. junk marks a line that
// is not a header field at all; ended, that the block was read up to its
// blank line (so a body follows).
type headerProblem struct {
	text  string
	junk  bool
	ended bool
}

// readHeader reads one header block. problem is set when the block is
// malformed; err is set only when reading fails.
func (s *Stream) readHeader() (length, consumed int, problem headerProblem, err error) {
	length = -1
	lines := 0
	for {
		line, err := s.in.line(maxHeaderLine)
		if errors.Is(err, errLineTooLong) {
			return 0, 0, headerProblem{text: "header line too long", junk: true}, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) && consumed > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, 0, headerProblem{}, err
		}
		consumed += len(line)
		if isBlank(line) {
			if lines == 0 {
				continue // stray blank lines between frames are harmless
			}
			break
		}
		if k := indexFold(line, "content-length"); k > 0 && lines == 0 {
			// Junk glued to the front of a header (the tail of a body whose
			// Content-Length was too short): drop it.
			s.log.Warn("junk before a header dropped", "bytes", k)
			line = line[k:]
		}
		lines++
		if lines > maxHeaderLines {
			return 0, 0, headerProblem{text: "too many header lines"}, nil
		}
		name, value, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
		if !ok || line[0] == '{' {
			if problem.text != "" {
				return 0, 0, problem, nil // the block broke off: no body to find
			}
			return 0, 0, headerProblem{text: fmt.Sprintf("malformed header line %s", quoteTrunc(line)), junk: true}, nil
		}
		if !bytes.EqualFold(bytes.TrimSpace(name), []byte("content-length")) {
			continue // Content-Type and unknown fields are ignored
		}
		n, perr := strconv.Atoi(string(bytes.TrimSpace(value)))
		switch {
		case perr != nil || n < 0:
			problem.text = fmt.Sprintf("invalid Content-Length %s", quoteTrunc(value))
		case n == 0:
			problem.text = "Content-Length is 0"
		default:
			length = n
		}
	}
	if problem.text == "" && length < 0 {
		problem.text = "missing Content-Length header"
	}
	if problem.text != "" {
		problem.ended = true
		return 0, 0, problem, nil
	}
	return length, consumed, headerProblem{}, nil
}

// recoverFromBadHeader handles a header block that was read to its blank
// line but is unusable: when a JSON object follows, it is consumed too, so a
// request whose header was broken still gets an error reply with its own
// id. Whatever else follows is read as the next frame (junk there gets
// replies of its own). It waits only for the first byte of the body and for
// the rest of a JSON object that has started.
func (s *Stream) recoverFromBadHeader(problem headerProblem) *badFrame {
	bad := &badFrame{err: jsonrpc2.NewError(jsonrpc2.ParseError, "invalid message header: "+problem.text), reply: true}
	if !problem.ended {
		return bad
	}
	for s.in.skipSpace(); s.in.buffered() == 0; s.in.skipSpace() {
		if !s.in.ensure(1) {
			return bad
		}
	}
	if s.in.peekByte() == '{' {
		if obj, ok := s.in.jsonObject(s.max); ok {
			if id, ok := lenientID(obj); ok {
				bad.id = id
			}
		}
	}
	s.in.skipSpace()
	return bad
}

// discardFrame reads a body of length bytes that is over the limit
// without keeping it, and turns it into the error its sender's peer sees.
func (s *Stream) discardFrame(length, headerLen int) (jsonrpc2.Message, int64, *badFrame, error) {
	var sc topScanner
	if err := s.in.discard(length, sc.feed); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, nil, err
	}
	e := jsonrpc2.NewError(CodeTooLarge, fmt.Sprintf("a message of %d bytes exceeds the limit of %d bytes: it was read and discarded", length, s.max))
	id, hasID := sc.id()
	s.log.Warn("message over the size limit discarded", "bytes", length, "limit", s.max, "method", sc.hasMethod, "id", hasID)
	switch {
	case hasID && !sc.hasMethod: // a response: the request it answers fails
		return jsonrpc2.NewResponse(id, nil, e), int64(headerLen + length), nil, nil
	case hasID: // a request: answered with the error
		return nil, 0, &badFrame{id: id, err: e, reply: true}, nil
	}
	return nil, 0, &badFrame{err: e}, nil // a notification: dropped
}

// topScanner picks the top-level "id" and "method" keys out of a JSON
// object fed to it in pieces, keeping nothing else: an oversized message
// is identified without being held.
type topScanner struct {
	depth      int
	inString   bool
	escaped    bool
	wantKey    bool   // at depth 1, the next string is a key
	inKey      bool   // reading a key
	key        []byte // the key read (only the first bytes: "id" and "method" are short)
	valueOf    string // the key whose value is being read at depth 1
	idRaw      []byte // the raw value of "id", when short
	idTooLong  bool
	hasMethod  bool
	sawID      bool
	capturedID bool
}

const maxScannedKey = 16

func (t *topScanner) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		// Most of a flood is nested values and their strings, where
		// nothing is kept: a tight loop on locals reads through them.
		if t.depth >= 2 || (t.inString && !t.inKey && !(t.depth == 1 && t.valueOf == "id")) {
			i = t.skip(b, i)
			if i >= len(b) {
				return
			}
			i-- // the loop's i++ comes back to it
			continue
		}
		c := b[i]
		if t.inString {
			switch {
			case t.escaped:
				t.escaped = false
			case c == '\\':
				t.escaped = true
			case c == '"':
				t.inString = false
				if t.inKey {
					t.inKey = false
					continue
				}
			}
			t.collect(c)
			continue
		}
		switch c {
		case '"':
			t.inString = true
			if t.depth == 1 && t.wantKey {
				t.inKey, t.key = true, t.key[:0]
				continue
			}
			t.collect(c)
		case '{', '[':
			t.depth++
			if t.depth == 1 {
				t.wantKey = true
			} else if t.depth == 2 && t.valueOf == "id" {
				t.idTooLong = true // an object or array is no id
			}
		case '}', ']':
			t.depth--
			if t.depth == 0 {
				t.endValue()
			}
		case ':':
			if t.depth == 1 {
				t.wantKey = false
				t.valueOf = string(t.key)
				switch t.valueOf {
				case "method":
					t.hasMethod = true
				case "id":
					t.sawID, t.idRaw = true, t.idRaw[:0]
				}
			}
		case ',':
			if t.depth == 1 {
				t.endValue()
				t.wantKey = true
			}
		case ' ', '\t', '\r', '\n':
		default:
			t.collect(c)
		}
	}
}

// skip reads b from i through nested values and strings that are not
// kept, on locals, and returns where the top level (depth 1, outside a
// string) is reached again, or len(b).
func (t *topScanner) skip(b []byte, i int) int {
	depth, inString, escaped := t.depth, t.inString, t.escaped
	defer func() { t.depth, t.inString, t.escaped = depth, inString, escaped }()
	for ; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 1 {
					return i + 1
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 1 {
				return i + 1
			}
		}
	}
	return i
}

// collect keeps a byte of a key or of the id's value.
func (t *topScanner) collect(c byte) {
	switch {
	case t.inKey:
		if len(t.key) < maxScannedKey {
			t.key = append(t.key, c)
		}
	case t.depth == 1 && t.valueOf == "id" && !t.capturedID:
		if len(t.idRaw) >= 256 {
			t.idTooLong = true
			return
		}
		t.idRaw = append(t.idRaw, c)
	}
}

func (t *topScanner) endValue() {
	if t.valueOf == "id" {
		t.capturedID = true
	}
	t.valueOf = ""
}

// id is the message's id, when it has a valid one.
func (t *topScanner) id() (jsonrpc2.ID, bool) {
	if !t.sawID || t.idTooLong || !t.capturedID || string(t.idRaw) == "null" {
		return jsonrpc2.ID{}, false
	}
	return parseID(t.idRaw)
}

// classifyBadBody decides how to answer a body that did not decode.
func classifyBadBody(body []byte, derr error) *badFrame {
	if !json.Valid(body) {
		return &badFrame{err: jsonrpc2.NewError(jsonrpc2.ParseError, "invalid JSON"), reply: true}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		msg := "a message must be a JSON object"
		if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
			msg = "batches are not supported by LSP"
		}
		return &badFrame{err: jsonrpc2.NewError(jsonrpc2.InvalidRequest, msg), reply: true}
	}
	_, hasMethod := obj["method"]
	_, hasResult := obj["result"]
	_, hasError := obj["error"]
	if !hasMethod && (hasResult || hasError) {
		// A malformed response: answering a response is never right.
		return &badFrame{err: jsonrpc2.NewError(jsonrpc2.InvalidRequest, "malformed response: "+derr.Error()), reply: false}
	}
	bad := &badFrame{err: jsonrpc2.NewError(jsonrpc2.InvalidRequest, "invalid request: "+describeInvalid(obj)), reply: true}
	if id, ok := lenientID(body); ok {
		bad.id = id
	}
	return bad
}

// describeInvalid names what is wrong with a JSON object that is not a valid
// JSON-RPC 2.0 request.
func describeInvalid(obj map[string]json.RawMessage) string {
	if v, ok := obj["jsonrpc"]; !ok || string(v) != `"2.0"` {
		return `"jsonrpc" must be "2.0"`
	}
	m, ok := obj["method"]
	if !ok {
		return `missing "method"`
	}
	var method string
	if json.Unmarshal(m, &method) != nil {
		return `"method" must be a string`
	}
	if id, ok := obj["id"]; ok {
		if _, ok := parseID(id); !ok && string(id) != "null" {
			return `"id" must be an integer or a string`
		}
	}
	if p, ok := obj["params"]; ok {
		if t := bytes.TrimSpace(p); len(t) > 0 && t[0] != '{' && t[0] != '[' && string(t) != "null" {
			return `"params" must be an object or an array`
		}
	}
	return "malformed message"
}

// lenientID returns the id of a JSON object when it has a valid one.
func lenientID(obj []byte) (jsonrpc2.ID, bool) {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(obj, &m) != nil || m.ID == nil {
		return jsonrpc2.ID{}, false
	}
	return parseID(m.ID)
}

func parseID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	var n int64
	if json.Unmarshal(raw, &n) == nil && bytes.IndexAny(raw, ".eE") < 0 {
		return jsonrpc2.NewNumberID(n), true
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return jsonrpc2.NewStringID(str), true
	}
	return jsonrpc2.ID{}, false
}

// Write implements jsonrpc2.Stream: one frame, one write.
func (s *Stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	body, err := jsonrpc2.EncodeMessage(msg)
	if err != nil {
		return 0, fmt.Errorf("encode message: %w", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf = append(s.wbuf[:0], "Content-Length: "...)
	s.wbuf = strconv.AppendInt(s.wbuf, int64(len(body)), 10)
	s.wbuf = append(s.wbuf, "\r\n\r\n"...)
	s.wbuf = append(s.wbuf, body...)
	n, err := s.rwc.Write(s.wbuf)
	return int64(n), err
}

// Close implements jsonrpc2.Stream.
func (s *Stream) Close() error { return s.rwc.Close() }

func isBlank(line []byte) bool {
	return string(line) == "\r\n" || string(line) == "\n"
}

func quoteTrunc(b []byte) string {
	b = bytes.TrimRight(b, "\r\n")
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "..."
	}
	return strconv.Quote(string(b))
}

// indexFold is a case-insensitive bytes.Index for an ASCII lower-case needle.
func indexFold(haystack []byte, needle string) int {
	for i := 0; i+len(needle) <= len(haystack); i++ {
		if bytes.EqualFold(haystack[i:i+len(needle)], []byte(needle)) {
			return i
		}
	}
	return -1
}

// frameReader is a buffered reader that can give bytes back, which the
// recovery from malformed frames needs. Unread bytes are buf[off:].
type frameReader struct {
	src io.Reader
	buf []byte
	off int
	err error // sticky error of src
}

func (f *frameReader) buffered() int { return len(f.buf) - f.off }

// fill reads at least one more byte from src, or returns its error.
func (f *frameReader) fill() error {
	if f.err != nil {
		return f.err
	}
	if f.off > 0 && f.off >= len(f.buf)/2 {
		n := copy(f.buf, f.buf[f.off:])
		f.buf = f.buf[:n]
		f.off = 0
	}
	if cap(f.buf)-len(f.buf) < 4096 {
		grown := make([]byte, len(f.buf), 2*cap(f.buf)+4096)
		copy(grown, f.buf)
		f.buf = grown
	}
	for {
		n, err := f.src.Read(f.buf[len(f.buf):cap(f.buf)])
		f.buf = f.buf[:len(f.buf)+n]
		if n > 0 {
			if err != nil {
				f.err = err
			}
			return nil
		}
		if err != nil {
			f.err = err
			return err
		}
	}
}

// line returns the next line including its '\n'. A line longer than max is
// consumed up to max bytes and reported as errLineTooLong.
func (f *frameReader) line(max int) ([]byte, error) {
	scanned := 0
	for {
		if i := bytes.IndexByte(f.buf[f.off+scanned:], '\n'); i >= 0 {
			end := f.off + scanned + i + 1
			if end-f.off > max {
				f.off += max
				return nil, errLineTooLong
			}
			line := f.buf[f.off:end]
			f.off = end
			return line, nil
		}
		scanned = f.buffered()
		if scanned > max {
			f.off += max
			return nil, errLineTooLong
		}
		if err := f.fill(); err != nil {
			if f.buffered() > 0 && errors.Is(err, io.EOF) {
				f.off = len(f.buf) // a partial last line: drop it
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// next consumes n bytes. The slice is valid until the next read.
func (f *frameReader) next(n int) ([]byte, error) {
	for f.buffered() < n {
		if cap(f.buf)-f.off < n {
			grown := make([]byte, f.buffered(), n+4096)
			copy(grown, f.buf[f.off:])
			f.buf, f.off = grown, 0
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
	b := f.buf[f.off : f.off+n]
	f.off += n
	return b, nil
}

// discard consumes n bytes without keeping them, handing each piece to
// fn: the buffer stays as small as it was.
func (f *frameReader) discard(n int, fn func([]byte)) error {
	for n > 0 {
		if f.buffered() == 0 {
			if err := f.fill(); err != nil {
				return err
			}
		}
		k := min(n, f.buffered())
		fn(f.buf[f.off : f.off+k])
		f.off += k
		n -= k
	}
	return nil
}

// unread gives back the last n bytes consumed by next.
func (f *frameReader) unread(n int) { f.off -= n }

// ensure reads until n bytes are buffered; false when the input ends first.
func (f *frameReader) ensure(n int) bool {
	for f.buffered() < n {
		if f.fill() != nil {
			return false
		}
	}
	return true
}

func (f *frameReader) peekByte() byte { return f.buf[f.off] }

func (f *frameReader) skipSpace() {
	for f.buffered() > 0 {
		switch f.buf[f.off] {
		case ' ', '\t', '\r', '\n':
			f.off++
		default:
			return
		}
	}
}

// jsonObject consumes one JSON object that starts at the read position,
// reading more input while the object is incomplete (up to max bytes). It
// reports false, consuming nothing, when no complete object is found.
func (f *frameReader) jsonObject(max int) ([]byte, bool) {
	depth, inString, escaped := 0, false, false
	for i := 0; ; i++ {
		for f.off+i >= len(f.buf) {
			if i >= max || f.fill() != nil {
				return nil, false
			}
		}
		c := f.buf[f.off+i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				obj := bytes.Clone(f.buf[f.off : f.off+i+1])
				f.off += i + 1
				return obj, true
			}
		}
	}
}
