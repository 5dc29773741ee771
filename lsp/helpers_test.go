package lsp_test

import (
	"testing"

	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// The helpers shared with the protocol server's tests are lsptest's.
var (
	ctx  = lsptest.Context
	code = lsptest.Code
)

type (
	echoArgs  = lsptest.EchoArgs
	sleepArgs = lsptest.SleepArgs
)

// session is a server and a fake editor connected to it.
type session struct {
	srv    *server.Server
	c      *lsptest.Client
	served <-chan error
}

func sessionOf(s *lsptest.Session) *session { return &session{srv: s.Srv, c: s.C, served: s.Served} }

// newSession is lsptest.NewSession.
func newSession(t testing.TB, cfg lsptest.Config, opts ...server.Option) *session {
	t.Helper()
	return sessionOf(lsptest.NewSession(t, cfg, opts...))
}

// initialized is lsptest.Initialized.
func initialized(t testing.TB, cfg lsptest.Config, opts ...server.Option) *session {
	t.Helper()
	return sessionOf(lsptest.Initialized(t, cfg, opts...))
}
