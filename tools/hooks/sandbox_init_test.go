package hooks

import "github.com/agentls/agentls/tools/sandbox"

// Started as the sandbox supervisor of a command, the test binary is that
// supervisor and nothing else.
func init() { sandbox.Main() }
