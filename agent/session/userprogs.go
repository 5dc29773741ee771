package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/workspace"
)

// The user's own programs (hooks, MCP servers from the user's settings or
// the ACP client) run as the user's, and what goes wrong with them is
// shown where the user looks: the task's progress (a Problem note, which
// every face shows whole: $/progress, ACP updates, the command line), the
// report, and, for a start in the background before any task, the host's
// Notice.

// problemLog is what failed of a task's MCP servers, for its report.
type problemLog struct {
	mu    sync.Mutex // guards items
	items []string
}

func (l *problemLog) add(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range l.items {
		if it == text {
			return
		}
	}
	l.items = append(l.items, text)
}

// section is the report's "MCP servers" section; "" when nothing failed.
func (l *problemLog) section() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## MCP servers\n\nWhat failed (the end of each server's stderr included):\n")
	for _, it := range l.items {
		b.WriteString("\n" + fence(it))
	}
	return b.String()
}

// fence is text as a fenced block that nothing in it can close.
func fence(text string) string {
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks + "\n" + strings.TrimRight(text, "\n") + "\n" + ticks + "\n"
}

// MCPStateDir is the folder under which each server of root's .mcp.json
// gets the only folder it may write (<dir>/<server name>): in agentls's
// state folder ($XDG_STATE_HOME/agentls, else ~/.local/state/agentls),
// out of every workspace and of the caches commands may write, one per
// root.
func MCPStateDir(root string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	base := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("the MCP servers' folders: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return filepath.Join(base, "agentls", "mcp-servers", filepath.Base(root)+"-"+hex.EncodeToString(sum[:6])), nil
}

// mcpLaunch is how the servers of ws start under s.
func (h *Host) mcpLaunch(ws *workspace.Workspace, s Settings) mcp.Launch {
	l := mcp.Launch{Dir: ws.Roots()[0], Roots: ws.Roots(), Sandbox: s.Sandbox, SecretEnv: []string{s.APIKeyEnv},
		Commands: h.commands, Getenv: h.opts.Getenv, Proxy: s.CommandNetwork.Proxy(h.logger())}
	if dir, err := MCPStateDir(ws.Roots()[0], h.opts.Getenv); err == nil {
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
	h.mcp.Start(servers, l)
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

// taskMCPLaunch is the launch of a task's servers: a wait for a start
// under way is shown at once in the task's progress (the port hears it
// before the task starts), a failed call in the progress and the report.
func (h *Host) taskMCPLaunch(ws *workspace.Workspace, s Settings, port Port, g *agent.Guard, problems *problemLog) mcp.Launch {
	l := h.mcpLaunch(ws, s)
	l.Progress = func(text string) {
		text = h.Redactor().String(text)
		if port != nil && g.TaskID() == "" {
			port.Event(agent.Event{Kind: agent.EventNote, Text: text})
		} else {
			g.Warn(text)
		}
	}
	l.Failure = func(text string) {
		text = "MCP: " + h.Redactor().String(text)
		problems.add(text)
		g.Problem(text)
	}
	return l
}
