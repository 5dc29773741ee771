package session

import (
	"encoding/json"

	"github.com/agentls/agentls/agent/extensions"
	"github.com/agentls/agentls/tools/mcp"
)

// MCPServerSource is implemented by a port whose face brings MCP servers
// of its own (ACP's session/new mcpServers).
type MCPServerSource interface {
	MCPServers() []mcp.ServerConfig
}

// MCPSecrets are the secrets of MCP servers' configurations
// (extensions.MCPSecrets), for a face that brings servers of its own: it
// hands them to redact.Configure before any server starts.
func MCPSecrets(servers []mcp.ServerConfig, getenv func(string) string) []string {
	return extensions.MCPSecrets(servers, getenv)
}

// mcpServersSetting is the "mcpServers" setting: .mcp.json's shape, either
// the map of servers or the whole file.
var mcpServersSetting = field{
	name: "mcpServers",
	set: func(c *Settings, raw json.RawMessage) error {
		v, err := mcp.ParseServers(raw, mcp.FromSettings)
		if err != nil {
			return err
		}
		c.MCPServers = v
		return nil
	},
	value: func(c Settings) any {
		if c.MCPServers == nil {
			return nil
		}
		m := make(map[string]mcp.ServerConfig, len(c.MCPServers))
		for _, s := range c.MCPServers {
			m[s.Name] = s
		}
		return m
	},
	show: func(c Settings) any {
		out := make([]string, 0, len(c.MCPServers))
		for _, s := range c.MCPServers {
			out = append(out, s.Describe()) // names of env and headers, never their values
		}
		return out
	},
}

// mcpSecrets are the secrets of the user's MCP servers (MCPSecrets).
func mcpSecrets(s Settings, getenv func(string) string) []string {
	return extensions.MCPSecrets(s.MCPServers, getenv)
}
