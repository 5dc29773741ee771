package agent

import (
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// The scenarios run on the real tools: one registry per task, with the
// task's guarded editor, closed (its commands killed) when the task ends.
func init() {
	realTools = func(ws *workspace.Workspace, g *Guard) []tools.Tool {
		reg := tools.New(tools.Env{Workspace: ws, Editor: g.Editor(ws, ws.DiskEditor())})
		g.OnDone(func() { reg.Close() })
		return reg.Tools()
	}
}
