package lsp

import (
	"context"
	"encoding/json"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/lsp/server"
)

// The settings are the host's (session.Settings): layered from the
// defaults, the environment, initializationOptions and each
// workspace/didChangeConfiguration (section "agentls"). The server hands
// them here as the client sent them; the service applies them, reports an
// invalid setting to the user (it keeps its value), and sets the server's
// log level and redactor from them.

// settings is the server's settings handler (server.WithSettingsHandler).
// It runs on the read loop.
func (s *Service) settings(ctx context.Context, from server.SettingsFrom, raw json.RawMessage) {
	var (
		cfg      session.Settings
		problems []session.Problem
		what     string
	)
	switch from {
	case server.FromInitialize:
		// The user's start-up settings: the host is made with them, and
		// their model endpoint may receive the key.
		cfg, problems = s.env.Apply(raw)
		problems = append(append([]session.Problem(nil), s.envProblems...), problems...)
		s.startMu.Lock()
		s.start = &cfg
		s.startMu.Unlock()
		what = "settings at initialize"
	default:
		// The next task runs under them, after the user's consent to what
		// they widen (the host's confirmSettings).
		cfg, problems = s.Host().Settings().Apply(raw)
		what = "configuration changed"
	}
	h := s.Host()
	h.SetSettings(cfg)
	r := h.Redactor()
	s.redactor.Store(&r)
	if l, err := server.ParseLevel(cfg.LogLevel); err == nil {
		s.srv.SetLogLevel(l)
	}
	s.reportSettingsProblems(ctx, problems)
	s.log().Info(what, "config", cfg)
}

// startSettings are the settings initialize left (those of the environment
// before it).
func (s *Service) startSettings() session.Settings {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.start != nil {
		return *s.start
	}
	return s.env
}

// currentRedactor is the Redactor of the host's current settings
// (server.WithRedactor).
func (s *Service) currentRedactor() server.Redactor { return *s.redactor.Load() }

// reportSettingsProblems tells the user, with one window/showMessage
// warning, which settings were not applied.
func (s *Service) reportSettingsProblems(ctx context.Context, problems []session.Problem) {
	if len(problems) == 0 {
		return
	}
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.String()
		s.log().Warn("invalid setting", "field", p.Field, "problem", p.Message)
	}
	s.srv.ShowMessage(ctx, protocol.MessageTypeWarning, "agentls: invalid configuration: "+strings.Join(parts, "; "))
}
