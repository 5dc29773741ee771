package lsp

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentls/agentls/agent/completion"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/agent/settings"
	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/lsp/server"
	"go.lsp.dev/protocol"
)

// ServiceOptions configure NewService. Zero fields mean their defaults.
type ServiceOptions struct {
	// ApprovalTimeout bounds the wait for the user's answer to an approval
	// question (window/showMessageRequest); no answer in time is a denial.
	// Default 2 minutes.
	ApprovalTimeout time.Duration
	// DrainTimeout bounds the wait, at server exit, for cancelled tasks to
	// end (their pending writes finish first). Default 5 s.
	DrainTimeout time.Duration
	// EchoTimeout bounds the wait for the didChange that echoes an applied
	// workspace/applyEdit. Default 2 s.
	EchoTimeout time.Duration
	// ApplyNoticeAfter is how long a task waits for the answer to
	// workspace/applyEdit before its progress says it is waiting for the
	// editor. The wait itself has no limit. Default 1 s.
	ApplyNoticeAfter time.Duration
	// SaveTimeout bounds the wait for the plugin's answer to
	// agentls/saveDocuments (save.go). Default saveTimeout, 30 s.
	SaveTimeout time.Duration
	// Getenv reads the environment: the settings' variables and the API
	// key (tests use it to avoid touching the process environment).
	// Default os.Getenv.
	Getenv func(string) string
	// UserDir is the user's agentls folder (settings.json, the key
	// agentls login stored, the confirmed model endpoints); "" means
	// os.UserConfigDir()/agentls.
	UserDir string
}

// Service is the LSP face of the agent: it hosts one session.Host for the
// server's roots and settings, registers the agentls.* commands and the
// code actions, and implements the host's Port for each task with
// $/progress, workspace/applyEdit and window/showMessageRequest. It holds no
// agent policy: modes, reports, summaries, approvals' rules and the task
// registry are the host's.
type Service struct {
	opts ServiceOptions
	srv  *server.Server

	hostOnce sync.Once
	host     *session.Host

	// The settings before the host owns them (settings.go): the user's
	// own (agent/settings: defaults, agentls login, environment, user
	// settings file), then those initialize left (start).
	user    *settings.Loaded
	startMu sync.Mutex // guards start
	start   *settings.Layered
	// redactor is the Redactor of the current settings, for the server
	// (server.WithRedactor).
	redactor atomic.Pointer[redact.Redactor]

	// reviews numbers the reviewed edits (review.go): their change
	// annotation ids are unique for the session.
	reviews atomic.Int64
	// saveDocs, diagnostics and forwardLSP are what the client showed of
	// the agentls requests its plugin answers (save.go, diagnostics.go,
	// forward.go).
	saveDocs, diagnostics, forwardLSP pluginRequest
	// editLoaded holds the files (absolute paths) the editor loaded to
	// apply an edit, closed before it: their later edits are saved like
	// the first while their buffer matches the disk (editor.go).
	editLoaded sync.Map
	// hints are the instruction comments' diagnostics and answers shown
	// to a client with standard LSP only (commenthints.go).
	hints commentHints
	// completions answers textDocument/inlineCompletion (inline.go).
	completions *completion.Engine
}

// NewService returns a service; pass its Options to server.New.
func NewService(opts ServiceOptions) *Service {
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = 2 * time.Minute
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	if opts.EchoTimeout <= 0 {
		opts.EchoTimeout = 2 * time.Second
	}
	if opts.ApplyNoticeAfter <= 0 {
		opts.ApplyNoticeAfter = time.Second
	}
	if opts.SaveTimeout <= 0 {
		opts.SaveTimeout = saveTimeout
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	s := &Service{opts: opts, completions: completion.New()}
	s.user = settings.Load(settings.Options{Getenv: opts.Getenv, Dir: opts.UserDir})
	var cache session.RedactorCache
	r := cache.Get(s.user.User.Settings, s.user.Getenv)
	s.redactor.Store(&r)
	return s
}

// Options are the server options that plug the service in: the agentls.*
// commands, the code actions, the roots and settings handlers (which hand
// them to the host), the redactor of the host's settings and the
// end-of-connection handler (Close).
func (s *Service) Options() []server.Option {
	return []server.Option{
		func(srv *server.Server) { s.srv = srv },
		server.WithCommands(s.Commands()...),
		server.WithCodeActions(s.codeActions),
		server.WithHover(s.hover, offerHover),
		server.WithInlineCompletion(s.inlineCompletion, s.completionEnabled),
		server.WithDocumentHandler(s.documentChanged),
		server.WithRootsHandler(s.rootsChanged),
		server.WithSettingsHandler(s.settings),
		server.WithRedactor(s.currentRedactor),
		server.WithEndHandler(s.Close),
	}
}

// Server is the server the service is plugged into (nil before New).
func (s *Service) Server() *server.Server { return s.srv }

// Host is the session host behind the service, made at its first use
// (once the server is configured).
func (s *Service) Host() *session.Host {
	s.hostOnce.Do(func() {
		user := s.user.User.Settings
		s.host = session.New(s.startSettings().Settings, session.Options{
			Getenv:       s.user.Getenv,
			User:         &user,
			Endpoints:    s.user.Endpoints,
			Logger:       s.srv.Logger(),
			Buffers:      s.srv.Buffers(),
			Watch:        true,
			DrainTimeout: s.opts.DrainTimeout,
			// definition, references, rename_symbol, ...: the editor's
			// servers through the plugin, else agentls's own.
			LanguageServers: langserver.NewServers(),
			// An MCP server starting in the background, or failing to.
			Notice: s.notice,
		})
	})
	return s.host
}

// notice shows the user what happens to their own programs outside any
// task (an MCP server starting in the background, or failing to):
// window/showMessage, a warning when it failed.
func (s *Service) notice(text string, failed bool) {
	typ := protocol.MessageTypeInfo
	if failed {
		typ = protocol.MessageTypeWarning
	}
	s.srv.ShowMessage(context.Background(), typ, "agentls: "+text)
}

// rootsChanged runs on the read loop: it must not block, so the workspace
// is (re)built in the background.
func (s *Service) rootsChanged(roots []string) {
	if len(roots) == 0 {
		return
	}
	h := s.Host()
	h.SetRoots(roots)
	go func() {
		if _, err := h.Workspace(context.Background()); err != nil {
			s.log().Warn("workspace not ready", "error", err)
		}
	}()
}

func (s *Service) log() *slog.Logger {
	if s.srv == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.srv.Logger()
}

// Close ends the host (see session.Host.Close). The server calls it when
// its connection ends.
func (s *Service) Close() {
	s.closeHints()
	s.Host().Close()
}
