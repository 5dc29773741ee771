package lsp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/lsp/server"
)

// An editor with standard LSP only (Helix, Kakoune, Zed's LSP, Sublime,
// Vim + ALE) has no agentls panel: what it shows of a server is its
// diagnostics and its hover. So for such a client agentls marks every
// instruction comment of the open documents ("// agent: ...") with a hint
// diagnostic that names the code action which runs it, and once a task has
// run the comment and left it in place (a question answered, nothing
// changed, a failure), the diagnostic carries the task's summary and the
// hover on the comment shows the whole answer. A client with an agentls
// plugin gets neither: its plugin shows tasks and answers itself, and a
// hover or diagnostic from agentls would only add noise to the language
// server's own.

// hintDelay gathers a burst of didChange notifications (typing) into one
// publication.
const hintDelay = 150 * time.Millisecond

// maxHoverAnswer bounds the answer text a hover shows; the report holds
// the rest.
const maxHoverAnswer = 6000

// commentAnswer is what the last task run on an instruction comment left
// for the comment's diagnostic and hover.
type commentAnswer struct {
	status  agent.State
	summary string
	answer  string
	report  string // file URI of the task's report
}

// answerKey names an instruction comment by its file and its text: an
// answer stays with the instruction it answered, and an edited
// instruction is a new one.
type answerKey struct{ file, instruction string }

// commentHints publishes the instruction comments' diagnostics of a
// standard client's open documents.
type commentHints struct {
	// publish serializes the computing and sending of a list, so that a
	// list computed earlier is never sent after a newer one.
	publish sync.Mutex
	mu      sync.Mutex
	pending map[string]bool // files to publish at the next flush
	timer   *time.Timer
	shown   map[string]bool // files whose published list is not empty
	answers map[answerKey]commentAnswer
	closed  bool
}

// standardClient reports whether the client declared no agentls plugin
// (capabilities.experimental.agentls): it is offered the hints and the
// hover.
func standardClient(caps protocol.ClientCapabilities) bool {
	d := declared(caps)
	return len(d.Requests) == 0 && !d.AnswerStream
}

// documentChanged is the server's document handler: it runs on the read
// loop, so it only marks the file and arms the flush.
func (s *Service) documentChanged(name string, _ bool) {
	if s.srv == nil || !standardClient(s.srv.ClientCapabilities()) {
		return
	}
	h := &s.hints
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if h.pending == nil {
		h.pending = map[string]bool{}
	}
	h.pending[name] = true
	if h.timer == nil {
		h.timer = time.AfterFunc(hintDelay, s.flushHints)
	}
}

// flushHints publishes the diagnostics of the files changed since the
// last flush.
func (s *Service) flushHints() {
	h := &s.hints
	h.mu.Lock()
	files := make([]string, 0, len(h.pending))
	for f := range h.pending {
		files = append(files, f)
	}
	h.pending, h.timer = nil, nil
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return
	}
	slices.Sort(files)
	for _, f := range files {
		s.publishHints(context.Background(), f)
	}
}

// publishHints publishes the instruction comments' diagnostics of one
// file: a closed file's are cleared, and a file that never had any is not
// sent an empty list.
func (s *Service) publishHints(ctx context.Context, name string) {
	h := &s.hints
	h.publish.Lock()
	defer h.publish.Unlock()
	doc, open := s.srv.Buffers().Get(name)
	var diags []protocol.Diagnostic
	if open {
		diags = s.commentDiagnostics(name, doc.Text, markersFor(doc.LanguageID, name))
	}
	h.mu.Lock()
	if h.shown == nil {
		h.shown = map[string]bool{}
	}
	was := h.shown[name]
	h.shown[name] = len(diags) > 0
	h.mu.Unlock()
	if len(diags) == 0 && !was {
		return
	}
	version := int32(-1)
	if open {
		version = doc.Version
	}
	s.srv.PublishDiagnostics(ctx, name, version, diags)
}

// commentDiagnostics is one diagnostic per instruction comment of text:
// a hint that names the code action, or the answer of the task that ran
// the comment.
func (s *Service) commentDiagnostics(name, text string, markers []string) []protocol.Diagnostic {
	ins := instructions(text, markers)
	if len(ins) == 0 {
		return nil
	}
	lines := strings.Split(text, "\n")
	out := make([]protocol.Diagnostic, 0, len(ins))
	for _, in := range ins {
		first := lines[in.StartLine]
		last := strings.TrimRight(lines[in.EndLine], "\r")
		d := protocol.Diagnostic{
			Range: protocol.Range{
				Start: protocol.Position{Line: uint32(in.StartLine), Character: utf16Len(first[:len(first)-len(strings.TrimLeft(first, " \t"))])},
				End:   protocol.Position{Line: uint32(in.EndLine), Character: utf16Len(last)},
			},
			Severity: protocol.DiagnosticSeverityHint,
			Source:   protocol.NewOptional(server.ServerName),
			Message:  protocol.String(fmt.Sprintf("Agent instruction: the code action %q runs it.", TitleRunComment)),
		}
		if a, ok := s.commentAnswerFor(name, in.Text); ok {
			d.Severity = protocol.DiagnosticSeverityInformation
			d.Message = protocol.String(fmt.Sprintf("agentls: %s Hover here for the whole answer.", ensurePeriod(cutLine(a.summary, 200))))
		}
		out = append(out, d)
	}
	return out
}

// ensurePeriod ends a sentence with a full stop unless it has one.
func ensurePeriod(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "…") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "!") {
		return s
	}
	return s + "."
}

func (s *Service) commentAnswerFor(name, instruction string) (commentAnswer, bool) {
	s.hints.mu.Lock()
	defer s.hints.mu.Unlock()
	a, ok := s.hints.answers[answerKey{name, instruction}]
	return a, ok
}

// keepCommentAnswer records the answer of a task that ran an instruction
// comment and left it in place, and republishes the file's diagnostics,
// for a standard client.
func (s *Service) keepCommentAnswer(ctx context.Context, name, instruction string, reply *RunReply) {
	if reply == nil || !standardClient(s.srv.ClientCapabilities()) {
		return
	}
	h := &s.hints
	h.mu.Lock()
	if h.answers == nil {
		h.answers = map[answerKey]commentAnswer{}
	}
	h.answers[answerKey{name, instruction}] = commentAnswer{
		status: agent.State(reply.Status), summary: reply.Summary, answer: reply.Answer, report: reply.Report,
	}
	h.mu.Unlock()
	s.publishHints(ctx, name)
}

// offerHover: hover is offered to a client with standard LSP only.
func offerHover(caps protocol.ClientCapabilities) bool { return standardClient(caps) }

// hover answers textDocument/hover on an instruction comment: the answer
// of the task that ran it, else what the comment is and how to run it.
// Elsewhere there is nothing (the language server's hover is the one that
// matters).
func (s *Service) hover(_ context.Context, srv *server.Server, p *protocol.HoverParams) (*protocol.Hover, error) {
	name, err := server.Filename(p.TextDocument.URI)
	if err != nil {
		return nil, nil
	}
	doc, ok := srv.Buffers().Get(name)
	if !ok {
		return nil, nil
	}
	in, ok := instructionAt(doc.Text, markersFor(doc.LanguageID, name), int(p.Position.Line))
	if !ok {
		return nil, nil
	}
	markdown := hoverMarkdown(srv.ClientCapabilities())
	var b strings.Builder
	if a, ok := s.commentAnswerFor(name, in.Text); ok {
		head := fmt.Sprintf("agentls ran this instruction (%s).", a.status)
		if markdown {
			head = "**" + head + "**"
		}
		b.WriteString(head)
		body := strings.TrimSpace(a.answer)
		if body == "" {
			body = strings.TrimSpace(a.summary) // a failure: the summary holds the error and its fix
		}
		if len(body) > maxHoverAnswer {
			body = strings.ToValidUTF8(body[:maxHoverAnswer], "") + "…\n\n(cut here; the report holds the whole answer)"
		}
		b.WriteString("\n\n" + body)
		if a.report != "" {
			b.WriteString("\n\nReport: " + uri.URI(a.report).FsPath())
		}
	} else {
		fmt.Fprintf(&b, "Agent instruction: the code action %q runs it as an edit task; the comment is removed once the change is made.", TitleRunComment)
	}
	kind := protocol.MarkupKindPlainText
	if markdown {
		kind = protocol.MarkupKindMarkdown
	}
	lines := strings.Split(doc.Text, "\n")
	return &protocol.Hover{
		Contents: &protocol.MarkupContent{Kind: kind, Value: b.String()},
		Range: &protocol.Range{
			Start: protocol.Position{Line: uint32(in.StartLine)},
			End:   protocol.Position{Line: uint32(in.EndLine), Character: utf16Len(strings.TrimRight(lines[in.EndLine], "\r"))},
		},
	}, nil
}

// hoverMarkdown reports whether the client takes markdown in a hover.
func hoverMarkdown(caps protocol.ClientCapabilities) bool {
	if caps.TextDocument == nil || caps.TextDocument.Hover == nil {
		return false
	}
	return slices.Contains(caps.TextDocument.Hover.ContentFormat, protocol.MarkupKindMarkdown)
}

// closeHints stops the pending publication at the connection's end.
func (s *Service) closeHints() {
	h := &s.hints
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.timer != nil {
		h.timer.Stop()
	}
}
