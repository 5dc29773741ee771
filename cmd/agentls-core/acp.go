package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/settings"
	"github.com/agentls/agentls/lsp/server"
)

// runACP serves the Agent Client Protocol over stdio on the same session
// host as `agentls serve`. It takes no flags: the settings are the user's
// (agent/settings.Load), sessions start in edit mode and every
// command and write asks (approval "ask"). stdout carries only the
// protocol; logs go to stderr (warnings) and the log file.
func runACP(ctx context.Context, io stdio, args []string) error {
	if len(args) == 1 && args[0] == "login" {
		// The terminal auth method of ACP clients: the agent's command
		// with "login" appended.
		return runLogin(ctx, io, nil)
	}
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprintf(io.err, "Usage: agentls acp [login]\n\nServe the Agent Client Protocol over stdin/stdout (Zed, JetBrains, agent-shell, ...).\nNo flags: the model is configured by the environment.\n%s", envHelp)
			return nil
		}
		return &exitError{code: 2, err: fmt.Errorf("agentls acp takes no arguments (got %q); configure it with the environment", args)}
	}
	// The user's settings (agent/settings: defaults, agentls login, the
	// environment, the user settings file); the key: its environment
	// variable, else the one agentls login stored.
	loaded := settings.Load(settings.Options{})
	problems := loaded.Problems
	// See runServe: a closed pipe must fail a write, not kill the process
	// before its tasks' writes drain.
	signal.Ignore(syscall.SIGPIPE)
	protect(io)
	limitMemory()
	level := new(slog.LevelVar)
	level.Set(slog.LevelInfo)
	errLevel := new(slog.LevelVar)
	errLevel.Set(slog.LevelWarn)
	var writers []ioWriter
	if f, _, err := server.OpenLogFile(server.DefaultLogFile()); err == nil {
		defer f.Close()
		writers = append(writers, f)
	}
	logger := slog.New(slog.NewMultiHandler(server.NewLogHandler(errLevel, io.err), server.NewLogHandler(level, writers...)))
	for _, p := range problems {
		logger.Warn("setting ignored", "problem", p.String())
	}
	logger.Info("settings", "sources", loaded.User.String())
	logout := func() error {
		dir, err := settings.UserDir()
		if err != nil {
			return err
		}
		return settings.ForgetLogin(dir)
	}
	return acp.Serve(ctx, io.in, io.out, acp.Options{Settings: loaded.User.Settings, Getenv: loaded.Getenv, Logger: logger, Version: version, Logout: logout})
}
