package acp

import (
	"context"
	"fmt"
	"slices"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
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
	n     int      // calls announced outside any tool call (an undo's edit, the settings question)
	open  []string // ids of the tool calls started and not finished, oldest first
	texts int      // agent_message_chunk updates sent
	// checking: the task is validating; its model text is the check's
	// verdict, not the answer.
	checking bool
	diffs    map[string][]sdk.ToolCallContent // by tool call: the diffs of its edits
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
		p.mu.Unlock()
	case agent.EventText:
		if e.Text == "" {
			return
		}
		p.mu.Lock()
		checking := p.checking
		if !checking {
			p.texts++
		}
		p.mu.Unlock()
		if checking {
			// The independent check's verdict is the agent's own
			// reasoning about its work, not part of the answer.
			p.a.update(p.s.id, sdk.UpdateAgentThoughtText(e.Text))
			return
		}
		p.a.update(p.s.id, sdk.UpdateAgentMessageText(e.Text))
	case agent.EventThought:
		if e.Text != "" {
			p.a.update(p.s.id, sdk.UpdateAgentThoughtText(e.Text))
		}
	case agent.EventPlan:
		if e.Plan != nil {
			p.a.update(p.s.id, sdk.SessionUpdate{Plan: &sdk.SessionUpdatePlan{Entries: planEntries(*e.Plan)}})
		}
	case agent.EventToolStarted:
		p.toolStarted(e)
	case agent.EventToolFinished:
		p.toolFinished(e)
	case agent.EventUsage:
		p.mu.Lock()
		checking := p.checking
		p.mu.Unlock()
		if checking {
			return // the check's own small context, not the session's
		}
		s := p.s.host.Settings()
		size := s.ContextWindow
		if size <= 0 {
			size = agent.ContextWindow(s.Model, 128_000)
		}
		used := e.Usage.InputTokens + e.Usage.OutputTokens
		p.a.update(p.s.id, sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: used, Size: size}})
	}
}

// toolStarted opens a tool call under the model's id of the call.
// update_plan is shown as the plan itself, not as a tool call.
func (p *turnPort) toolStarted(e agent.Event) {
	if e.Tool == "update_plan" {
		return
	}
	args, raw := parseArgs(e.Args)
	p.mu.Lock()
	p.open = append(p.open, e.CallID)
	p.mu.Unlock()
	tc := &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(e.CallID), Title: toolTitle(e.Tool, args),
		Kind: toolKind(e.Tool), Status: sdk.ToolCallStatusInProgress, Locations: p.locations(args)}
	if raw != nil {
		tc.RawInput = raw
	}
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCall: tc})
}

func (p *turnPort) locations(a callArgs) []sdk.ToolCallLocation {
	abs, ok := absPath(p.s.root, a.Path)
	if !ok {
		return nil
	}
	loc := sdk.ToolCallLocation{Path: abs}
	if a.Line > 0 {
		line := a.Line
		loc.Line = &line
	}
	return []sdk.ToolCallLocation{loc}
}

// toolFinished closes the call e finishes, by its id.
func (p *turnPort) toolFinished(e agent.Event) {
	if e.Tool == "update_plan" {
		return
	}
	id := e.CallID
	p.mu.Lock()
	i := slices.Index(p.open, id)
	if i >= 0 {
		p.open = slices.Delete(p.open, i, i+1)
	}
	content := p.diffs[id]
	delete(p.diffs, id)
	p.mu.Unlock()
	if i < 0 {
		return
	}
	status := sdk.ToolCallStatusCompleted
	if e.IsError {
		status = sdk.ToolCallStatusFailed
	}
	if e.Text != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock(e.Text)))
	}
	u := &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(id), Status: &status, Content: content}
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCallUpdate: u})
}

// isOpen reports whether the client was shown call id as started and not
// yet finished.
func (p *turnPort) isOpen(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return id != "" && slices.Contains(p.open, id)
}

// ownCallID names a call the loop did not make (an undo's edit, a
// question asked before the task started), which the client is shown as a
// call of its own.
func (p *turnPort) ownCallID(kind string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	return fmt.Sprintf("%s-%s-%d", p.s.id, kind, p.n)
}

// closeCalls ends every call still open (a cancelled turn: the loop
// publishes nothing after the cancel).
func (p *turnPort) closeCalls(status sdk.ToolCallStatus) {
	p.mu.Lock()
	open := p.open
	p.open = nil
	p.mu.Unlock()
	for _, id := range open {
		st := status
		p.a.update(p.s.id, sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(id), Status: &st}})
	}
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

// Ask implements session.Port with session/request_permission: allow once,
// allow always (only when the host names a command prefix it may
// remember), reject once, reject always (the host's approval policy
// remembers it for the conversation: this session's later prompts follow
// up its earlier ones).
func (p *turnPort) Ask(ctx context.Context, q session.Question) (tools.Decision, error) {
	opts := []sdk.PermissionOption{{OptionId: optAllowOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if q.AlwaysPrefix != "" {
		opts = append(opts, sdk.PermissionOption{OptionId: optAllowAlways, Name: "Always allow `" + q.AlwaysPrefix + "`", Kind: sdk.PermissionOptionKindAllowAlways})
	}
	opts = append(opts,
		sdk.PermissionOption{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		sdk.PermissionOption{OptionId: optRejectAlways, Name: "Always reject in this session", Kind: sdk.PermissionOptionKindRejectAlways})
	title := q.Request.Summary
	tc := sdk.ToolCallUpdate{Title: &title}
	if p.isOpen(q.Request.CallID) {
		tc.ToolCallId = sdk.ToolCallId(q.Request.CallID)
	} else {
		// Not from a call the client has seen: announce one.
		tc.ToolCallId = sdk.ToolCallId(p.ownCallID("ask"))
		kind := toolKind(q.Request.Tool)
		tc.Kind = &kind
	}
	resp, err := p.a.peer().RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(p.s.id), ToolCall: tc, Options: opts})
	if err != nil {
		return tools.Deny, fmt.Errorf("permission request: %w", err)
	}
	if resp.Outcome.Selected == nil {
		return tools.Deny, nil // cancelled
	}
	return decision(string(resp.Outcome.Selected.OptionId)), nil
}
