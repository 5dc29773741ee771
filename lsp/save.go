package lsp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/session"
)

// MethodSaveDocuments is the server-to-client request that asks the editor
// to save buffers (docs/lsp.md): params {"uris": [DocumentUri]}, result
// {"saved": [DocumentUri], "failed": [{"uri": DocumentUri, "reason":
// string}]}. The agentls plugins answer it; other clients answer
// MethodNotFound.
const MethodSaveDocuments = "agentls/saveDocuments"

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

// askPlugin sends an agentls request that only the agentls plugins answer.
// A client that answers MethodNotFound, or nothing within timeout (ALE never
// answers), is marked in unsupported and not asked again: errNotAnswered.
func (s *Service) askPlugin(ctx context.Context, method string, params, result any, timeout time.Duration, unsupported *atomic.Bool) error {
	if unsupported.Load() {
		return errNotAnswered
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := s.srv.call(cctx, method, params, result)
	if err == nil {
		return nil
	}
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.MethodNotFound || cctx.Err() != nil && ctx.Err() == nil {
		unsupported.Store(true)
		return errNotAnswered
	}
	return fmt.Errorf("%s: %w", method, err)
}

// Save implements session.Saver with agentls/saveDocuments. A client that
// does not know the request, or does not answer it, is not asked again.
func (p *taskPort) Save(ctx context.Context, paths []string) (map[string]string, error) {
	svc := p.svc
	h := svc.Host()
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	params := saveDocumentsParams{}
	byURI := map[string]string{}
	for _, rel := range paths {
		wp, err := ws.Resolve(rel)
		if err != nil {
			continue
		}
		u := string(uri.File(ws.Abs(wp)))
		params.URIs = append(params.URIs, u)
		byURI[u] = rel
	}
	var res saveDocumentsResult
	if err := svc.askPlugin(ctx, MethodSaveDocuments, params, &res, saveTimeout, &svc.noSave); err != nil {
		if errors.Is(err, errNotAnswered) {
			return nil, session.ErrSaveUnsupported
		}
		return nil, err
	}
	failed := map[string]string{}
	for _, f := range res.Failed {
		if rel, ok := byURI[f.URI]; ok {
			failed[rel] = f.Reason
		}
	}
	return failed, nil
}
