package render

import (
	"strings"
	"sync"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Stream makes a streamed markdown text inert piece by piece, for clients
// that render the concatenation of the pieces (ACP message chunks). What a
// client has been sent is never taken back, so a piece is sent only when
// it ends where any later text starts a new block:
//
//   - Write holds text back until a block is complete (another block has
//     started after it), then sends the complete blocks made inert;
//   - Flush (the end of one model response) ends the text with a blank
//     line and sends it when nothing is left open (a code fence, a list);
//     otherwise the next response's text joins it, as it will at the
//     client;
//   - Close (the end of the task) sends whatever is left.
//
// Reference definitions of remote URLs are always made inert (Inert does
// so), so a definition in a later piece cannot turn an earlier piece into
// an image. A piece that would still make what was sent before it come
// alive (possible only after a very long block was sent in parts, or after
// Close) is sent with its punctuation escaped (Escaped).
//
// A Stream is safe for concurrent use.
type Stream struct {
	emit func(string)

	mu      sync.Mutex // guards the fields below
	pending strings.Builder
	// tail is what was sent since the sent text last ended at a block
	// boundary (atBoundary): a new piece is checked together with it.
	tail string
}

// maxPending bounds the text a Stream holds back.
const maxPending = 64 << 10

// NewStream returns a Stream that passes inert pieces to emit (called with
// the Stream's lock held: emit must not call back into it).
func NewStream(emit func(string)) *Stream { return &Stream{emit: emit} }

// Write adds a delta of the text.
func (s *Stream) Write(delta string) {
	if delta == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending.WriteString(delta)
	buf := s.pending.String()
	if len(buf) > maxPending {
		// One block this long (a huge code block or list): its complete
		// lines are sent, checked with what was sent before, rather than
		// parsed again at every line.
		if cut := strings.LastIndexByte(buf, '\n') + 1; cut > 0 {
			s.send(buf[:cut])
			s.pending.Reset()
			s.pending.WriteString(buf[cut:])
		}
		return
	}
	if !strings.Contains(delta, "\n") {
		return // a block only ends at a line break
	}
	if cut := completeBlocks(buf); cut > 0 {
		s.send(buf[:cut])
		s.pending.Reset()
		s.pending.WriteString(buf[cut:])
	}
}

// Flush ends one model response: its text is closed with a blank line and
// sent if that leaves nothing open.
func (s *Stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.Len() == 0 {
		return
	}
	buf := s.pending.String()
	if !strings.HasSuffix(buf, "\n\n") {
		buf = strings.TrimRight(buf, "\n") + "\n\n"
	}
	s.pending.Reset()
	if atBoundary(s.tail + Inert(buf)) {
		s.send(buf)
		return
	}
	s.pending.WriteString(buf)
}

// Close sends whatever is held back (the end of the task).
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.Len() == 0 {
		return
	}
	s.send(s.pending.String())
	s.pending.Reset()
}

// send emits piece made inert, checked together with the tail.
func (s *Stream) send(piece string) {
	out := Inert(piece)
	if s.tail != "" && Live(s.tail+out) {
		out = Escaped(piece)
	}
	s.emit(out)
	s.tail += out
	if atBoundary(s.tail) {
		s.tail = ""
	}
}

// atBoundary reports whether text ends where any later text starts a new
// top-level block: it ends a line, a paragraph written after a blank line
// is a top-level paragraph (no open fence or HTML block swallows it), and
// the block before is no list (whose items indented text would continue).
func atBoundary(src string) bool {
	if !strings.HasSuffix(src, "\n") {
		return false
	}
	probe := src + "\nP\n"
	doc := markdown().Parser().Parse(text.NewReader([]byte(probe)), parser.WithContext(parser.NewContext()))
	last := doc.LastChild()
	if last == nil || last.Kind() != ast.KindParagraph || blockStart(last) != len(src)+1 {
		return false
	}
	prev := last.PreviousSibling()
	return prev == nil || prev.Kind() != ast.KindList
}

// completeBlocks returns the length of the prefix of buf made of complete
// top-level blocks: up to the line where its last top-level block starts.
func completeBlocks(buf string) int {
	src := []byte(buf)
	doc := markdown().Parser().Parse(text.NewReader(src), parser.WithContext(parser.NewContext()))
	last := doc.LastChild()
	if last == nil || last.PreviousSibling() == nil {
		return 0
	}
	pos := blockStart(last)
	if pos <= 0 || pos > len(src) {
		return 0
	}
	return strings.LastIndexByte(buf[:pos], '\n') + 1
}

// blockStart is where a block's source starts, or -1.
func blockStart(n ast.Node) int {
	if p := n.Pos(); p >= 0 {
		return p
	}
	if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
		return n.Lines().At(0).Start
	}
	return -1
}
