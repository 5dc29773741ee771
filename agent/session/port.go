package session

import (
	"context"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Port is a face's side of one task: how the user sees it, how its edits
// land and how the user is asked. The LSP server, the ACP agent and the
// command line each implement it; the host holds no other link to them.
type Port interface {
	// Event receives the task's events in order (agent.Sink).
	agent.Sink
	// Editor returns how the task's edits reach ws: through the editor's
	// buffers or on disk. nil means on disk.
	Editor(ws *workspace.Workspace) workspace.Editor
	// Ask asks the user whether the task may do q.Request. It is called only
	// when the settings leave the decision to the user.
	Ask(ctx context.Context, q Question) (tools.Decision, error)
}

// Question is one approval question for the user.
type Question struct {
	TaskID  string
	Prompt  string // the task's prompt
	Request tools.ApprovalRequest
	// AlwaysPrefix is the command prefix "Always allow" would remember; ""
	// when none may be offered (not a command, or one that runs arbitrary
	// code).
	AlwaysPrefix string
}
