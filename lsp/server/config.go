package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/session"
)

// The settings are the session's (session.Settings): layered from the
// defaults, the environment, initializationOptions and each
// workspace/didChangeConfiguration (section "agentls"); an invalid setting is
// reported to the user and keeps its value.

// ParseLevel parses a log level name: debug, info, warn or error.
func ParseLevel(name string) (slog.Level, error) {
	switch strings.ToLower(name) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", name)
}

// applyLevel sets level from the settings, when they name one.
func applyLevel(c session.Settings, level *slog.LevelVar) {
	if l, err := ParseLevel(c.LogLevel); err == nil {
		level.Set(l)
	}
}

func envLookup(name string) string { return os.Getenv(name) }

// reportConfigProblems tells the user, with one window/showMessage warning,
// which settings were not applied.
func (s *Server) reportConfigProblems(ctx context.Context, problems []session.Problem) {
	if len(problems) == 0 {
		return
	}
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.String()
		s.log.Warn("invalid setting", "field", p.Field, "problem", p.Message)
	}
	s.ShowMessage(ctx, protocol.MessageTypeWarning, "agentls: invalid configuration: "+strings.Join(parts, "; "))
}

func (s *Server) didChangeConfiguration(ctx context.Context, p *protocol.DidChangeConfigurationParams) error {
	s.mu.Lock()
	cfg, problems := s.config.Apply(p.Settings)
	s.config = cfg
	s.mu.Unlock()
	applyLevel(cfg, s.level)
	s.reportConfigProblems(ctx, problems)
	s.log.Info("configuration changed", "config", cfg)
	if s.onConfig != nil {
		s.onConfig(cfg)
	}
	return nil
}
