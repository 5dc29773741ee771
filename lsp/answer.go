package lsp

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/lsp/server"
)

// MethodAnswer is the server-to-client notification that streams a task's
// answer as the model writes it (docs/lsp.md): params {"taskId", "text",
// "done"?}. Each text is a delta to append to the ones before it for the
// task; done comes once, last, when the task ends (the command's reply,
// with the final answer, follows it). It is sent only to clients that
// declare AnswerStreamCapability; the agentls plugins do.
const MethodAnswer = "agentls/answer"

// AnswerStreamCapability is the client capability that asks for
// agentls/answer: capabilities.experimental.agentls.answerStream = true.
const AnswerStreamCapability = "experimental.agentls.answerStream"

// AnswerNotification declares agentls/answer for the editor contract
// (editors/contract.json).
var AnswerNotification = ClientNotification[AnswerParams]{Method: MethodAnswer, Capability: AnswerStreamCapability}

// AnswerParams are the params of agentls/answer.
type AnswerParams struct {
	TaskID string `json:"taskId"`
	// Text is the next part of the answer (markdown, made inert and
	// redacted), to append to the earlier parts of the task.
	Text string `json:"text"`
	// Done: the task ended; no more text comes for it.
	Done bool `json:"done,omitempty"`
}

// AnswerInterval is the shortest time between two agentls/answer
// notifications of one task: text that arrives sooner is gathered and sent
// in one (a fast model does not flood the editor with a redraw per token).
const AnswerInterval = 80 * time.Millisecond

// answerStream sends a task's answer text to the client as it arrives,
// gathered to at most one notification per AnswerInterval. The text comes
// from the agent's EventText, which the loop has already made inert a
// markdown block at a time (agent/render.Stream); here it is redacted like
// everything the editor shows. The independent check's verdict (text
// while the task validates) is an internal step and is not streamed, as in
// the ACP face. Its methods are safe for concurrent use.
type answerStream struct {
	srv *server.Server
	ctx context.Context // never cancelled: the last part is sent after the request ends

	sendMu sync.Mutex // held while sending: keeps the notifications in order

	mu       sync.Mutex // guards the fields below
	taskID   string
	pending  strings.Builder
	sent     bool   // text was sent (done is sent only then)
	last     string // the last text taken for sending, to keep turns apart
	apart    bool   // a model call or a tool call ended since the last text
	checking bool   // the task validates: its text is the check's verdict
	lastSent time.Time
	timer    *time.Timer
	closed   bool
}

// newAnswerStream returns the stream of one task, or nil when the client
// did not ask for agentls/answer (a nil stream does nothing).
func (s *Service) newAnswerStream(ctx context.Context) *answerStream {
	if s.srv == nil || s.srv.Client() == nil || !answerStreamDeclared(s.srv.ClientCapabilities()) {
		return nil
	}
	return &answerStream{srv: s.srv, ctx: context.WithoutCancel(ctx)}
}

// Event takes the text of the task's events; other events only mark where
// one model turn ends and the next begins.
func (a *answerStream) Event(e agent.Event) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if e.TaskID != "" {
		a.taskID = e.TaskID
	}
	switch e.Kind {
	case agent.EventState:
		a.checking = e.State == agent.StateValidating
		a.apart = true
	case agent.EventToolStarted, agent.EventUsage:
		a.apart = true
	case agent.EventText:
		if e.Text == "" || a.checking {
			return
		}
		text := e.Text
		if a.apart && a.last != "" {
			// Each model response's text is its own paragraph: the loop
			// ends a response with a blank line, unless it left a block
			// open.
			switch {
			case strings.HasSuffix(a.last, "\n\n"):
			case strings.HasSuffix(a.last, "\n"):
				text = "\n" + strings.TrimLeft(text, "\n")
			default:
				text = "\n\n" + strings.TrimLeft(text, "\n")
			}
		}
		a.apart = false
		a.last = text
		a.pending.WriteString(text)
		if a.timer == nil {
			a.timer = time.AfterFunc(max(AnswerInterval-time.Since(a.lastSent), 0), a.flush)
		}
	}
}

// flush sends what was gathered; it runs on the timer.
func (a *answerStream) flush() {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	a.mu.Lock()
	a.timer = nil
	text, id := a.pending.String(), a.taskID
	a.pending.Reset()
	if text != "" {
		a.sent = true
		a.lastSent = time.Now()
	}
	a.mu.Unlock()
	if text != "" {
		a.send(AnswerParams{TaskID: id, Text: text})
	}
}

// Close sends what is left and, when any text was sent, the done
// notification. It is called when the task has ended, before the
// command's reply; later events are ignored.
func (a *answerStream) Close() {
	if a == nil {
		return
	}
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	text, id := a.pending.String(), a.taskID
	a.pending.Reset()
	sent := a.sent || text != ""
	a.mu.Unlock()
	if !sent {
		return
	}
	a.send(AnswerParams{TaskID: id, Text: text, Done: true})
}

// send sends one notification, redacted. a.sendMu must be held.
func (a *answerStream) send(p AnswerParams) {
	p.Text = a.srv.Redact(p.Text)
	a.srv.Notify(a.ctx, MethodAnswer, p)
}

// answerStreamDeclared reports whether caps declare
// experimental.agentls.answerStream.
func answerStreamDeclared(caps protocol.ClientCapabilities) bool {
	return declared(caps).AnswerStream
}
