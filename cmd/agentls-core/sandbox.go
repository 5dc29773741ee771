package main

import (
	"fmt"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/sandbox"
)

// Started with sandbox.Arg, agentls is the supervisor of one command (see
// package sandbox): it confines itself, runs the command, kills what the
// command left and exits, before main runs.
func init() { sandbox.Main() }

// protect prepares a process that runs commands: every process a command
// starts is reaped and killed by it (a subreaper), and its environment and
// memory are out of a command's reach (not dumpable). It also keeps a P
// for the protocol beside the search workers (tools.ReserveProtocolProc).
func protect(io stdio) {
	_ = tools.ReserveProtocolProc()
	if err := tools.ProtectServer(); err != nil {
		fmt.Fprintf(io.err, "agentls: commands may outlive their task: %v\n", err)
	}
}
