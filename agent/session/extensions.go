package session

import (
	"context"

	"github.com/agentls/agentls/agent/extensions"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/prompts"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/workspace"
)

// The extensions of a task (MCP servers, hooks, prompt files) are run by
// package agent/extensions; the host says how their programs run (the
// sandbox, the network, the secrets they never see) and where what goes
// wrong with them is shown: the task's progress (a Problem note, which
// every face shows whole: $/progress, ACP updates, the command line), the
// report, and, for a start in the background before any task, the host's
// Notice.

// Prompts are the custom commands of the workspace and the user
// (agent/prompts), sorted by name. Files that could not be read are
// logged and left out.
func (h *Host) Prompts(ctx context.Context) ([]prompts.Prompt, error) {
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	return h.prompts.Read(ws.Roots()), nil
}

// CachedPrompts are the custom commands as read at most a few seconds
// ago, for requests that must not walk folders each time (code actions);
// nil before the workspace is built.
func (h *Host) CachedPrompts() []prompts.Prompt {
	h.syncMu.Lock()
	ws := h.ws
	h.syncMu.Unlock()
	if ws == nil {
		return nil
	}
	return h.prompts.Cached(ws.Roots())
}

// sessionOf is the session ID of task id of this host; "" when unknown.
func (h *Host) sessionOf(id string) string {
	if at := h.tasks.Task(id); at != nil {
		return at.SessionID()
	}
	return ""
}

// hooks are the user's hooks of one task in ws under s.
func (h *Host) hooks(ws *workspace.Workspace, s Settings) *extensions.Hooks {
	return extensions.NewHooks(extensions.HookOptions{
		Config:    s.Hooks,
		Dir:       ws.Roots()[0],
		SecretEnv: []string{s.APIKeyEnv},
		Commands:  h.commands,
		SessionOf: h.sessionOf,
		Redact:    func(text string) string { return h.Redactor().String(text) },
		Started:   &h.sessionStarted,
	})
}

// taskServers are the MCP servers a task of prompt may use under s: the
// user's, the port's (MCPServerSource), and the workspace's .mcp.json
// once the user approved it (asked through port).
func (h *Host) taskServers(ctx context.Context, s Settings, prompt string, ws *workspace.Workspace, port Port) *extensions.TaskServers {
	var client []mcp.ServerConfig
	if src, ok := port.(MCPServerSource); ok {
		client = src.MCPServers()
	}
	var asker permission.Asker
	if port != nil {
		asker = port
	}
	return h.servers.ForTask(ctx, s.MCPServers, client, ws.Roots()[0], prompt, asker)
}

// mcpLaunch is how the servers of ws start under s.
func (h *Host) mcpLaunch(ws *workspace.Workspace, s Settings) mcp.Launch {
	l := mcp.Launch{Dir: ws.Roots()[0], Roots: ws.Roots(), Sandbox: s.Sandbox, SecretEnv: []string{s.APIKeyEnv},
		Commands: h.commands, Getenv: h.opts.Getenv, Proxy: s.CommandNetwork.Proxy(h.logger())}
	if dir, err := extensions.StateDir(ws.Roots()[0], h.opts.Getenv); err == nil {
		l.StateDir = dir
	} else {
		h.logger().Warn("the workspace's MCP servers have no folder to write", "error", err)
	}
	return l
}

// StartMCP starts servers in the background (the user's settings at the
// workspace's start, the ACP client's at session/new), each with the
// long first-start limit, so tasks find their tools ready; it returns at
// once. What happens is told through the host's Notice.
func (h *Host) StartMCP(ctx context.Context, servers []mcp.ServerConfig) {
	if len(servers) == 0 {
		return
	}
	ws, err := h.Workspace(ctx)
	if err != nil {
		return
	}
	h.startMCP(ws, h.Settings(), servers)
}

func (h *Host) startMCP(ws *workspace.Workspace, s Settings, servers []mcp.ServerConfig) {
	if len(servers) == 0 {
		return
	}
	l := h.mcpLaunch(ws, s)
	l.Progress = func(text string) { h.notice(text, false) }
	l.Failure = func(text string) { h.notice(text, true) }
	h.servers.Start(servers, l)
}

// notice tells the user about the user's programs outside any task, through
// Options.Notice (the log always), redacted.
func (h *Host) notice(text string, failed bool) {
	text = h.Redactor().String(text)
	if failed {
		h.logger().Warn("mcp: " + text)
	} else {
		h.logger().Info("mcp: " + text)
	}
	if h.opts.Notice != nil {
		h.opts.Notice(text, failed)
	}
}
