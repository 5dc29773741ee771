package lsp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Titles of the approval question's answers.
const (
	ActionAllowOnce    = "Allow once"
	ActionAllowForTask = "Allow for this task"
	ActionAlwaysPrefix = "Always allow" // followed by " `PREFIX`"
	ActionDeny         = "Deny"
)

// taskPort is the LSP side of one task (session.Port): its events become
// $/progress, its edits workspace/applyEdit (or disk writes), and its
// approval questions window/showMessageRequest.
type taskPort struct {
	svc  *Service
	sink *progressSink
}

var _ session.Port = (*taskPort)(nil)

// Event implements agent.Sink.
func (p *taskPort) Event(e agent.Event) { p.sink.Event(e) }

// Editor implements session.Port.
func (p *taskPort) Editor(ws *workspace.Workspace) workspace.Editor {
	return &Editor{svc: p.svc, ws: ws, sink: p.sink}
}

// Ask implements session.Port: "Allow once", "Allow for this task",
// "Always allow `PREFIX`" (when the host offers a prefix) and "Deny". No
// answer within ServiceOptions.ApprovalTimeout, or a client error, denies;
// when the client has never answered one and lets one go unanswered, later
// questions of the session are denied at once (and the user is told once
// how to allow them).
func (p *taskPort) Ask(ctx context.Context, q session.Question) (tools.Decision, error) {
	svc := p.svc
	srv := svc.srv
	actions := []protocol.MessageActionItem{{Title: ActionAllowOnce}, {Title: ActionAllowForTask}}
	if q.AlwaysPrefix != "" {
		actions = append(actions, protocol.MessageActionItem{Title: ActionAlwaysPrefix + " `" + q.AlwaysPrefix + "`"})
	}
	actions = append(actions, protocol.MessageActionItem{Title: ActionDeny})
	msg := fmt.Sprintf("agentls (task %s, %q) wants to %s.", q.TaskID, cutLine(q.Prompt, 60), q.Request.Summary)
	if q.Request.Path != "" && q.Request.Command == "" && !q.Request.Secret {
		msg += " The file is not open in the editor, so the change goes straight to disk."
	}
	if svc.clientMute.Load() {
		// Some clients (ALE) never answer server-to-client requests: do not
		// stall every later call of every task for the full timeout.
		return tools.Deny, errors.New(`the editor did not answer an earlier approval question, so this is denied without asking (the user can set agentls.approval to "auto" or list commands in agentls.allowCommands)`)
	}
	actx, cancel := context.WithTimeout(ctx, svc.opts.ApprovalTimeout)
	defer cancel()
	// While the question is open the task waits for the user, not for the
	// command (which has not started): say so, then go back.
	prev := p.sink.swapActivity("waiting for your approval to " + cutLine(q.Request.Summary, 80))
	defer p.sink.setActivity(prev)
	item, err := srv.showMessageRequest(actx, &protocol.ShowMessageRequestParams{
		Type: protocol.MessageTypeWarning, Message: srv.redact(msg), Actions: actions,
	})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Deny, ctx.Err()
		}
		why := err.Error()
		if errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil {
			why = fmt.Sprintf("no answer within %s", svc.opts.ApprovalTimeout)
			if !svc.clientAnswered.Load() && svc.clientMute.CompareAndSwap(false, true) {
				srv.ShowMessage(ctx, protocol.MessageTypeWarning, fmt.Sprintf(
					"agentls: the editor did not answer an approval question within %s, so actions that need approval are denied for the rest of this session. "+
						`Set agentls.approval to "auto", or list commands in agentls.allowCommands, to allow them.`, svc.opts.ApprovalTimeout))
			}
		}
		srv.Logger().Warn("approval question not answered: denied", "request", q.Request.Summary, "error", why)
		return tools.Deny, fmt.Errorf("the editor could not ask the user (%s), so it is denied", why)
	}
	svc.clientAnswered.Store(true)
	if item == nil {
		return tools.Deny, nil
	}
	switch {
	case item.Title == ActionAllowOnce:
		return tools.AllowOnce, nil
	case item.Title == ActionAllowForTask:
		return tools.AllowForTask, nil
	case q.AlwaysPrefix != "" && strings.HasPrefix(item.Title, ActionAlwaysPrefix):
		return tools.AllowAlways, nil
	}
	return tools.Deny, nil
}
