package acp

import (
	"fmt"
	"os"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools/mcp"
)

// mcpServers are the MCP servers a client gives session/new or
// session/load, as the host takes them: stdio (which every agent must
// support), streamable HTTP and SSE. They are the user's editor
// configuration: trusted like the user's settings (a stdio server may use
// the network), started when a task of the session first needs them.
// A server that cannot be used is left out with a note for the log.
func mcpServers(in []sdk.McpServer) ([]mcp.ServerConfig, []string) {
	var out []mcp.ServerConfig
	var notes []string
	for _, s := range in {
		c := mcp.ServerConfig{Source: mcp.FromClient}
		switch {
		case s.Stdio != nil:
			c.Name, c.Command, c.Args = s.Stdio.Name, s.Stdio.Command, s.Stdio.Args
			for _, e := range s.Stdio.Env {
				if c.Env == nil {
					c.Env = map[string]string{}
				}
				c.Env[e.Name] = e.Value
			}
		case s.Http != nil:
			c.Name, c.Type, c.URL, c.Headers = s.Http.Name, "http", s.Http.Url, headers(s.Http.Headers)
		case s.Sse != nil:
			c.Name, c.Type, c.URL, c.Headers = s.Sse.Name, "sse", s.Sse.Url, headers(s.Sse.Headers)
		default:
			notes = append(notes, "an MCP server over the ACP channel is not supported")
			continue
		}
		if err := c.Check(); err != nil {
			notes = append(notes, err.Error())
			continue
		}
		out = append(out, c)
	}
	// Their env values and headers are secrets of the user's: every sink
	// (the model's requests, these updates, the store, the log) hides
	// them from now on, before the first task starts a server.
	redact.Configure(session.MCPSecrets(out, os.Getenv)...)
	return out, notes
}

func headers(hs []sdk.HttpHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}

// MCPServers implements session.MCPServerSource: the servers the client
// gave this turn's session. They are set when the session is made and
// never change, so no lock is taken (Prompt holds the session's while the
// host starts the task).
func (p *turnPort) MCPServers() []mcp.ServerConfig { return p.s.mcp }

// mcpNote is the reply's word on the MCP servers the client offered.
func mcpNote(used []mcp.ServerConfig, notes []string) map[string]any {
	names := make([]string, len(used))
	for i, c := range used {
		names[i] = c.Name
	}
	note := map[string]any{"mcpServers": fmt.Sprintf("%d used: their tools reach the model as mcp__<server>__<tool> in edit tasks", len(used)), "servers": names}
	if len(notes) > 0 {
		note["notUsed"] = notes
	}
	return map[string]any{"agentls": note}
}
