package server

import (
	"context"
	"fmt"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/workspace"
)

// Document sync. These handlers run on the read loop in arrival order, so
// the edits of successive didChange notifications apply in the order the
// editor sent them. Errors are logged (and so mirrored to the client); they
// never end the connection.

func (s *Server) didOpen(_ context.Context, p *protocol.DidOpenTextDocumentParams) error {
	name, err := Filename(p.TextDocument.URI)
	if err != nil {
		s.log.Debug("didOpen ignored", "error", err)
		return nil
	}
	s.buffers.Open(name, string(p.TextDocument.LanguageID), p.TextDocument.Version, p.TextDocument.Text)
	s.docChanged()
	s.documentEvent(name, true)
	s.log.Debug("didOpen", "file", name, "version", p.TextDocument.Version)
	return nil
}

func (s *Server) didChange(_ context.Context, p *protocol.DidChangeTextDocumentParams) error {
	name, err := Filename(p.TextDocument.URI)
	if err != nil {
		s.log.Debug("didChange ignored", "error", err)
		return nil
	}
	changes := make([]workspace.Change, 0, len(p.ContentChanges))
	for i, c := range p.ContentChanges {
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangePartial:
			r := workspace.Range{
				Start: workspace.Position{Line: c.Range.Start.Line, Character: c.Range.Start.Character},
				End:   workspace.Position{Line: c.Range.End.Line, Character: c.Range.End.Character},
			}
			changes = append(changes, workspace.Change{Range: &r, Text: c.Text})
		case *protocol.TextDocumentContentChangeWholeDocument:
			changes = append(changes, workspace.Change{Text: c.Text})
		default:
			return fmt.Errorf("didChange %s: change %d has no text", name, i)
		}
	}
	if err := s.buffers.Change(name, p.TextDocument.Version, changes); err != nil {
		return fmt.Errorf("didChange: %w", err)
	}
	s.docChanged()
	s.documentEvent(name, true)
	return nil
}

func (s *Server) didClose(_ context.Context, p *protocol.DidCloseTextDocumentParams) error {
	name, err := Filename(p.TextDocument.URI)
	if err != nil {
		s.log.Debug("didClose ignored", "error", err)
		return nil
	}
	s.buffers.Close(name)
	s.docChanged()
	s.documentEvent(name, false)
	s.log.Debug("didClose", "file", name)
	return nil
}

// didSave: the buffer already holds the saved text. When the client sends
// the text anyway and it differs, the buffer is brought in line with it.
func (s *Server) didSave(_ context.Context, p *protocol.DidSaveTextDocumentParams) error {
	name, err := Filename(p.TextDocument.URI)
	if err != nil {
		return nil
	}
	s.log.Debug("didSave", "file", name)
	defer s.buffers.Saved(name) // the disk now holds the buffer's text: it is clean
	if p.Text == nil {
		return nil
	}
	doc, ok := s.buffers.Get(name)
	if !ok || doc.Text == *p.Text {
		return nil
	}
	return s.buffers.Change(name, doc.Version, []workspace.Change{{Text: *p.Text}})
}

// documentEvent runs the document handlers (WithDocumentHandler).
func (s *Server) documentEvent(name string, open bool) {
	for _, f := range s.onDocument {
		f(name, open)
	}
}
