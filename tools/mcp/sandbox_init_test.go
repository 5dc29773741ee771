package mcp

import "github.com/agentls/agentls/tools/sandbox"

// The test binary supervises the servers as the agentls binary does.
func init() { sandbox.Main() }
