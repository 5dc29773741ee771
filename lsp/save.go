package lsp

import (
	"context"
	"errors"
	"fmt"
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

// Save implements session.Saver with agentls/saveDocuments. A client that
// does not know the request, or does not answer it, is not asked again.
func (p *taskPort) Save(ctx context.Context, paths []string) (map[string]string, error) {
	svc := p.svc
	if svc.noSave.Load() {
		return nil, session.ErrSaveUnsupported
	}
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
	cctx, cancel := context.WithTimeout(ctx, saveTimeout)
	defer cancel()
	var res saveDocumentsResult
	err = svc.srv.call(cctx, MethodSaveDocuments, params, &res)
	if err != nil {
		var rpcErr *jsonrpc2.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.MethodNotFound || cctx.Err() != nil && ctx.Err() == nil {
			svc.noSave.Store(true)
			return nil, session.ErrSaveUnsupported
		}
		return nil, fmt.Errorf("%s: %w", MethodSaveDocuments, err)
	}
	failed := map[string]string{}
	for _, f := range res.Failed {
		if rel, ok := byURI[f.URI]; ok {
			failed[rel] = f.Reason
		}
	}
	return failed, nil
}
