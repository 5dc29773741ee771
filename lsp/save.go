package lsp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// MethodSaveDocuments is the server-to-client request that asks the editor
// to save buffers (docs/lsp.md): params {"uris": [DocumentUri]}, result
// {"saved": [DocumentUri], "failed": [{"uri": DocumentUri, "reason":
// string}]}. The agentls plugins answer it; other clients answer
// MethodNotFound.
const MethodSaveDocuments = "agentls/saveDocuments"

// SaveDocumentsRequest declares agentls/saveDocuments for the editor
// contract (editors/contract.json); Save sends it through this declaration.
var SaveDocumentsRequest = ClientRequest[saveDocumentsParams, saveDocumentsResult]{Method: MethodSaveDocuments}

// saveTimeout bounds the wait for the answer to agentls/saveDocuments.
// Only a plugin that declared the request is asked (pluginreqs.go), and
// it answers once its saves ran; a save runs the editor's before-save
// hooks, which may wait on the editor's own language server (Emacs with
// eglot and a cold gopls took 23 s). Answered late, the files would be
// written behind the editor's buffers, which the editor then reports as
// changed on disk.
const saveTimeout = 30 * time.Second

type saveDocumentsParams struct {
	URIs []string `json:"uris"`
}

type saveDocumentsResult struct {
	Saved  []string `json:"saved"`
	Failed []struct {
		URI    string `json:"uri"`
		Reason string `json:"reason"`
	} `json:"failed"`
}

// errNotAnswered is askPlugin's error for a client that does not answer an
// agentls request.
var errNotAnswered = errors.New("the client does not answer this request")

// pluginRequest is what the server knows of a client's answers to one
// agentls request.
type pluginRequest struct {
	unsupported atomic.Bool // the client does not know it, or never answers it
}

// askPlugin sends an agentls request that only the agentls plugins answer
// (ask sends it only to a client that declared it). A client that answers
// MethodNotFound is not asked again (errNotAnswered). One that lets a
// request go unanswered within timeout is slow or busy (a dialog open in
// Neovim, a before-save hook waiting in Emacs): it misses this one and is
// asked the next time, never written off for the rest of the session.
func (s *Service) askPlugin(ctx context.Context, method string, params, result any, timeout time.Duration, req *pluginRequest) error {
	if req.unsupported.Load() {
		return errNotAnswered
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := s.srv.Call(cctx, method, params, result)
	if err == nil {
		return nil
	}
	var rpcErr *jsonrpc2.Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.MethodNotFound:
		req.unsupported.Store(true)
		return errNotAnswered
	case cctx.Err() != nil && ctx.Err() == nil:
		return errNotAnswered
	}
	return fmt.Errorf("%s: %w", method, err)
}
