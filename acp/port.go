package acp

import (
	"fmt"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/workspace"
)

// Permission option IDs of session/request_permission.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// turnPort is the ACP side of one task (session.Port): its events become
// session/update notifications, its approval questions
// session/request_permission, its edits fs/write_text_file (or disk writes)
// with a diff on the tool call that made them.
type turnPort struct {
	session.Unsupported // no buffers to save, no editor diagnostics

	a *Agent
	s *acpSession

	mu    sync.Mutex
	n     int        // tool calls announced without a model call id
	open  []openCall // started and not finished, oldest first
	texts int        // agent_message_chunk updates sent
	// apart: something happened since the last message chunk (a model
	// call ended, a tool ran): the next model text is a new paragraph.
	apart bool
	last  string // the last message chunk sent
	// checking: the task is validating; its model text is the check's
	// verdict, an internal step the user is not shown.
	checking bool
	diffs    map[string][]sdk.ToolCallContent // by tool call: the diffs of its edits
	problems int                              // problem cards shown so far (their ids)
}

var _ session.Port = (*turnPort)(nil)

func newTurnPort(a *Agent, s *acpSession) *turnPort {
	return &turnPort{a: a, s: s, diffs: map[string][]sdk.ToolCallContent{}}
}

// Event implements agent.Sink.
func (p *turnPort) Event(e agent.Event) {
	switch e.Kind {
	case agent.EventState:
		p.mu.Lock()
		p.checking = e.State == agent.StateValidating
		p.apart = true
		p.mu.Unlock()
	case agent.EventText:
		if e.Text == "" {
			return
		}
		p.mu.Lock()
		checking := p.checking
		text := e.Text
		if !checking {
			if p.apart && p.texts > 0 {
				// The loop closes each response with a blank line; when
				// the previous one did not end so, keep the turns apart.
				switch {
				case strings.HasSuffix(p.last, "\n\n"):
				case strings.HasSuffix(p.last, "\n"):
					text = "\n" + strings.TrimLeft(text, "\n")
				default:
					text = "\n\n" + strings.TrimLeft(text, "\n")
				}
			}
			p.apart = false
			p.texts++
			p.last = text
		}
		p.mu.Unlock()
		if checking {
			// The independent check's verdict ("PASS", or what is
			// missing) is an internal step: the loop acts on it, and
			// what the agent does next is what the client sees.
			return
		}
		p.a.update(p.s.id, sdk.UpdateAgentMessageText(text))
	case agent.EventThought:
		if e.Text != "" {
			p.a.update(p.s.id, sdk.UpdateAgentThoughtText(e.Text))
		}
	case agent.EventPlan:
		if e.Plan != nil {
			p.a.update(p.s.id, sdk.SessionUpdate{Plan: &sdk.SessionUpdatePlan{Entries: planEntries(*e.Plan)}})
		}
	case agent.EventToolStarted:
		p.setApart()
		p.toolStarted(e)
	case agent.EventToolFinished:
		p.toolFinished(e)
	case agent.EventNote:
		if e.Problem {
			p.problem(e)
		}
	case agent.EventUsage:
		p.mu.Lock()
		checking := p.checking
		p.apart = true // one model call ended: its text is one paragraph
		p.mu.Unlock()
		if checking {
			return // the check's own small context, not the session's
		}
		// The context size: the model's own (the models setting), else
		// the contextWindow setting, else the size known for its name.
		s := p.s.host.Settings()
		size := s.ContextWindow
		if m, ok := s.ModelInfo(s.Model); ok && m.ContextWindow > 0 {
			size = m.ContextWindow
		}
		if size <= 0 {
			size = agent.ContextWindow(s.Model, 128_000)
		}
		used := e.Usage.InputTokens + e.Usage.OutputTokens
		u := &sdk.SessionUsageUpdate{Used: used, Size: size}
		if c, ok := s.Cost(s.Model, e.Usage); ok {
			// The session's cost so far: every priced call of its turns.
			p.s.mu.Lock()
			p.s.cost += c
			u.Cost = &sdk.Cost{Amount: p.s.cost, Currency: "USD"}
			p.s.mu.Unlock()
		}
		p.a.update(p.s.id, sdk.SessionUpdate{UsageUpdate: u})
	}
}

func (p *turnPort) setApart() {
	p.mu.Lock()
	p.apart = true
	p.mu.Unlock()
}

// finish ends a turn whose task ended by itself: the answer when it was
// not streamed, the error of a failed task.
func (p *turnPort) finish(res *agent.Result) {
	p.closeCalls(sdk.ToolCallStatusFailed)
	if res == nil {
		return
	}
	p.mu.Lock()
	streamed := p.texts > 0
	p.mu.Unlock()
	if !streamed && res.Answer != "" {
		p.a.update(p.s.id, sdk.UpdateAgentMessageText(res.Answer))
	}
	if res.Status == agent.StateFailed {
		msg := fmt.Sprintf("\n\nThe task failed (%s)", res.StopReason)
		if res.Error != "" {
			msg += ": " + res.Error
		}
		p.a.update(p.s.id, sdk.UpdateAgentMessageText(msg))
	}
}

// Editor implements session.Port: edits go through the client's
// fs/write_text_file when it offers it, else to disk; each edit is shown as
// a diff on the tool call that made it.
func (p *turnPort) Editor(ws *workspace.Workspace) workspace.Editor {
	return &clientEditor{p: p, ws: ws}
}
