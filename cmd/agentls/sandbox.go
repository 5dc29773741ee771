package main

import "github.com/agentls/agentls/tools/sandbox"

// Started with sandbox.Arg, agentls is the supervisor of one command (see
// package sandbox): it confines itself, runs the command, kills what the
// command left and exits, before main runs.
func init() { sandbox.Main() }
