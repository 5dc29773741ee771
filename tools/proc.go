package tools

import (
	"os"
	"os/exec"
	"time"
)

// PrepareCommand sets cmd up the way run_command runs every command, for
// other code that runs a workspace command (the agent's check command): its
// own process group, killed as a whole when cmd's context ends (L26); stdin
// closed; the environment (cmd.Env, or this process's when nil) without
// agentls's own secrets and settings, plus secretEnv, the names of further
// variables to drop (the configured API key variable).
func PrepareCommand(cmd *exec.Cmd, secretEnv []string) {
	setGroup(cmd)
	cmd.Cancel = func() error {
		killGroup(cmd.Process.Pid, true)
		return nil
	}
	// Grandchildren that keep the output pipes open must not hold Wait.
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin = nil
	base := cmd.Env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = commandEnv(base, secretEnv)
}
