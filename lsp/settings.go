package lsp

import (
	"context"
	"encoding/json"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/agent/settings"
	"github.com/agentls/agentls/lsp/server"
)

// The settings are the host's (session.Settings): the user's own
// (agent/settings: defaults, agentls login, environment, user settings
// file), then the client's initializationOptions and each
// workspace/didChangeConfiguration (section "agentls"). The server hands
// the client's here as it sent them; the service applies them, reports an
// invalid setting to the user (it keeps its value), and sets the server's
// log level and redactor from them. What the client's settings widen, or
// a model endpoint they name, applies once the user says yes (the host's
// confirmSettings, against the user's own settings).

// settings is the server's settings handler (server.WithSettingsHandler).
// It runs on the read loop.
func (s *Service) settings(ctx context.Context, from server.SettingsFrom, raw json.RawMessage) {
	var (
		cfg      session.Settings
		problems []session.Problem
		what     string
		sources  string
	)
	switch from {
	case server.FromInitialize:
		// The host is made with them; the user's own settings are its
		// baseline.
		l, more := settings.Client(s.user.User, raw)
		cfg, sources = l.Settings, l.String()
		problems = append(append([]session.Problem(nil), s.user.Problems...), more...)
		s.startMu.Lock()
		s.start = &l
		s.startMu.Unlock()
		what = "settings at initialize"
	default:
		// The next task runs under them, after the user's consent to what
		// they widen (the host's confirmSettings).
		s.startMu.Lock()
		cur := s.user.User
		if s.start != nil {
			cur = *s.start
		}
		cur.Settings = s.Host().Settings()
		l, more := settings.Client(cur, raw)
		s.start = &l
		s.startMu.Unlock()
		cfg, problems, sources = l.Settings, more, l.String()
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
	s.log().Info(what, "config", cfg, "sources", sources)
}

// startSettings are the settings initialize left (the user's own before
// it).
func (s *Service) startSettings() settings.Layered {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.start != nil {
		return *s.start
	}
	return s.user.User
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
