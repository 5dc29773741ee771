// Package extensions runs what the user and the workspace add to a task:
// MCP servers (the user's mcpServers setting, the face's own, a
// workspace's .mcp.json once the user approved it), hooks (the user's
// "hooks" setting) and prompt files (custom commands). It decides which of
// them a task gets and runs them; the session host (agent/session) owns
// the task, says how programs run (sandbox, network, secrets) and is its
// only importer.
package extensions

import (
	"strings"
)

// fence is text as a fenced block that nothing in it can close.
func fence(text string) string {
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks + "\n" + strings.TrimRight(text, "\n") + "\n" + ticks + "\n"
}
