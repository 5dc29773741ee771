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

// saveTimeout bounds the wait for the answer to agentls/saveDocuments:
// some clients (ALE) never answer server-to-client requests.
const saveTimeout = 5 * time.Second

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
	answered    atomic.Bool // the client answered it at least once
	unsupported atomic.Bool // the client does not know it, or never answers it
}

// askPlugin sends an agentls request that only the agentls plugins answer.
// A client that answers MethodNotFound, or that lets its first one go
// unanswered within timeout (ALE never answers), is not asked again
// (errNotAnswered). A client that has answered before and is busy now (a
// dialog open in Neovim) just misses this one.
func (s *Service) askPlugin(ctx context.Context, method string, params, result any, timeout time.Duration, req *pluginRequest) error {
	if req.unsupported.Load() {
		return errNotAnswered
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := s.srv.Call(cctx, method, params, result)
	if err == nil {
		req.answered.Store(true)
		return nil
	}
	var rpcErr *jsonrpc2.Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.MethodNotFound:
		req.unsupported.Store(true)
		return errNotAnswered
	case cctx.Err() != nil && ctx.Err() == nil:
		if !req.answered.Load() {
			req.unsupported.Store(true)
		}
		return errNotAnswered
	}
	return fmt.Errorf("%s: %w", method, err)
}
