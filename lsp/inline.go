package lsp

import (
	"context"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/completion"
	"github.com/agentls/agentls/lsp/server"
	"github.com/agentls/agentls/workspace"
)

// Inline completion (textDocument/inlineCompletion, LSP 3.18): the
// protocol's side. The engine (agent/completion) builds the context,
// passes it through the context gate and asks the model; the host gives
// it the model client, the gate and the settings (setting "completion",
// off unless enabled).

// completionEnabled says whether the user turned inline completion on
// (server.WithInlineCompletion reads it at initialize and after every
// settings change).
func (s *Service) completionEnabled() bool { return s.Host().Settings().Completion.Enabled }

// inlineCompletion answers one request from the open document's text.
func (s *Service) inlineCompletion(ctx context.Context, srv *server.Server, p *server.InlineCompletionParams) (*server.InlineCompletionList, error) {
	empty := &server.InlineCompletionList{Items: []server.InlineCompletionItem{}}
	name, err := server.Filename(p.TextDocument.URI)
	if err != nil {
		return empty, nil
	}
	doc, ok := srv.Buffers().Get(name)
	if !ok {
		return empty, nil
	}
	cfg, env, on, err := s.Host().Completion(ctx)
	if err != nil || !on {
		if err != nil {
			s.log().Debug("inline completion unavailable", "error", err)
		}
		return empty, nil
	}
	env.Others = func() []completion.Document {
		var out []completion.Document
		for _, f := range srv.Buffers().Filenames() {
			if f == name {
				continue
			}
			if d, ok := srv.Buffers().Get(f); ok {
				out = append(out, completion.Document{Name: d.Filename, LanguageID: d.LanguageID, Version: d.Version, Text: d.Text})
			}
		}
		return out
	}
	env.Version = func(name string) (int32, bool) {
		d, ok := srv.Buffers().Get(name)
		return d.Version, ok
	}
	req := completion.Request{
		Doc:      completion.Document{Name: doc.Filename, LanguageID: doc.LanguageID, Version: doc.Version, Text: doc.Text},
		Position: workspace.Position{Line: p.Position.Line, Character: p.Position.Character},
		Invoked:  p.Context.TriggerKind == server.InlineCompletionInvoked,
	}
	a, err := s.completions.Complete(ctx, cfg, env, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.log().Debug("inline completion failed", "error", err)
		return empty, nil
	}
	s.log().Debug("inline completion", "outcome", string(a.Outcome), "cached", a.Cached, "sentBytes", a.Sent, "modelMs", a.ModelTime.Milliseconds())
	if a.Text == "" {
		return empty, nil
	}
	return &server.InlineCompletionList{Items: []server.InlineCompletionItem{{
		InsertText: a.Text,
		Range:      &protocol.Range{Start: p.Position, End: p.Position},
	}}}, nil
}
