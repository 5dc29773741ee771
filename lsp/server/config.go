package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"go.lsp.dev/protocol"
)

// The server does not know what the settings mean: it hands them, as the
// client sent them, to the handlers the face installed (WithSettingsHandler):
// initializationOptions at initialize, the settings of each
// workspace/didChangeConfiguration. The face applies and checks them, and
// sets the server's log level (SetLogLevel) and redaction (WithRedactor)
// from them.

// SettingsFrom says which message a SettingsHandler's settings came in.
type SettingsFrom int

const (
	// FromInitialize: the initializationOptions of initialize, handled
	// before the roots handler and before the initialize result is sent.
	FromInitialize SettingsFrom = iota
	// FromDidChangeConfiguration: the settings of a
	// workspace/didChangeConfiguration notification.
	FromDidChangeConfiguration
)

// A SettingsHandler receives settings as the client sent them (raw may be
// empty or null). It runs on the read loop and must not block.
type SettingsHandler func(ctx context.Context, from SettingsFrom, raw json.RawMessage)

// WithSettingsHandler adds a handler for the settings the client sends.
func WithSettingsHandler(f SettingsHandler) Option {
	return func(s *Server) { s.onSettings = append(s.onSettings, f) }
}

// A Redactor hides secrets in text (String) and in a JSON reply, keeping it
// valid JSON (JSON).
type Redactor interface {
	String(text string) string
	JSON(raw []byte) []byte
}

// WithRedactor sets the function that returns the current Redactor: what
// the server sends or logs passes through it (messages, progress, command
// replies and errors, the log and its mirror to the client). Without it
// text goes out as it is. It is called for every record and message, from
// any goroutine: it must be cheap and must not log.
func WithRedactor(current func() Redactor) Option { return func(s *Server) { s.redactor = current } }

// SetLogLevel sets the level of the log (and of its mirror to the client).
func (s *Server) SetLogLevel(l slog.Level) { s.level.Set(l) }

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

func (s *Server) settings(ctx context.Context, from SettingsFrom, raw json.RawMessage) {
	for _, f := range s.onSettings {
		f(ctx, from, raw)
	}
	if from == FromDidChangeConfiguration {
		s.syncInlineRegistration(ctx)
	}
}

func (s *Server) didChangeConfiguration(ctx context.Context, p *protocol.DidChangeConfigurationParams) error {
	s.settings(ctx, FromDidChangeConfiguration, json.RawMessage(p.Settings))
	return nil
}
