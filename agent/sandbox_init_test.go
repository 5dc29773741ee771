package agent

import "github.com/agentls/agentls/tools/sandbox"

// The test binary supervises commands as the agentls binary does: re-run
// with sandbox.Arg it becomes the supervisor and exits.
func init() { sandbox.Main() }
