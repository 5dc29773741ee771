package render

import (
	"strings"
	"sync"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Stream makes a streamed markdown text inert piece by piece, for clients
// that render the concatenation of the pieces (ACP message chunks). It
// holds text back until a block is complete (another block has started
// after it), then emits the complete blocks made inert. What a client has
// been sent is never taken back, so each emitted piece is checked together
// with everything emitted before it; a piece that would make the whole come
// alive (an image opened in one piece and closed in the next) is emitted as
// a fenced code block. Reference definitions of remote URLs are always made
// inert (Inert does so), so a definition in a later piece cannot turn an
// earlier piece into an image.
//
// A Stream is safe for concurrent use.
type Stream struct {
	emit func(string)

	mu      sync.Mutex // guards the fields below
	pending strings.Builder
	sent    strings.Builder // everything emitted, as emitted
}

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
	if !strings.Contains(delta, "\n") {
		return // a block only ends at a line break
	}
	buf := s.pending.String()
	cut := completeBlocks(buf)
	if cut <= 0 {
		return
	}
	s.send(buf[:cut])
	s.pending.Reset()
	s.pending.WriteString(buf[cut:])
}

// Flush emits whatever is held back (the end of one model response).
func (s *Stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.Len() == 0 {
		return
	}
	s.send(s.pending.String())
	s.pending.Reset()
}

func (s *Stream) send(piece string) {
	out := Inert(piece)
	if Live(s.sent.String() + out) {
		out = Fenced(piece)
	}
	s.sent.WriteString(out)
	s.emit(out)
}

// completeBlocks returns the length of the prefix of buf made of complete
// top-level blocks: up to the line where its last top-level block starts.
func completeBlocks(buf string) int {
	src := []byte(buf)
	doc := md.Parser().Parse(text.NewReader(src), parser.WithContext(parser.NewContext()))
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
