package lsp

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/session"
)

// MethodDiagnostics is the server-to-client request for the diagnostics the
// editor's language servers publish (docs/lsp.md): params {"uris":
// [DocumentUri]}, result [{"uri", "version"?, "diagnostics": Diagnostic[]}].
// The agentls plugins answer it; other clients answer MethodNotFound.
const MethodDiagnostics = "agentls/diagnostics"

// DiagnosticsRequest declares agentls/diagnostics for the editor contract
// (editors/contract.json); Diagnostics sends it through this declaration.
var DiagnosticsRequest = ClientRequest[diagnosticsParams, []documentDiagnostics]{Method: MethodDiagnostics}

// diagnosticsTimeout bounds one agentls/diagnostics request (ALE never
// answers server-to-client requests).
const diagnosticsTimeout = 3 * time.Second

type diagnosticsParams struct {
	URIs []string `json:"uris"`
}

type documentDiagnostics struct {
	URI         string          `json:"uri"`
	Version     *int32          `json:"version,omitempty"`
	Diagnostics []DiagnosticArg `json:"diagnostics"`
	// Checked says whether a language server reports diagnostics for the
	// document (the plugin knows which servers are attached); absent when
	// the plugin cannot tell, and the server learns it from edits.
	Checked *bool `json:"checked,omitempty"`
}

// uncheckedLanguages remembers, per client, the file extensions for which
// an edit's wait saw no diagnostics at all: later edits do not wait, until
// the client reports something for that language.
type uncheckedLanguages struct {
	mu   sync.Mutex // guards exts
	exts map[string]bool
}

func (u *uncheckedLanguages) set(path string, none bool) {
	ext := filepath.Ext(path)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.exts == nil {
		u.exts = map[string]bool{}
	}
	if none {
		u.exts[ext] = true
	} else {
		delete(u.exts, ext)
	}
}

func (u *uncheckedLanguages) has(path string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.exts[filepath.Ext(path)]
}

// NothingReported implements session.UncheckedLearner.
func (p *taskPort) NothingReported(path string) { p.svc.unchecked.set(path, true) }

// Diagnostics implements session.DiagnosticsSource with agentls/diagnostics.
// A client that does not know the request, or does not answer it, is not
// asked again.
func (p *taskPort) Diagnostics(ctx context.Context, paths []string) ([]session.Diagnostic, map[string]int32, error) {
	svc := p.svc
	ws, err := svc.Host().Workspace(ctx)
	if err != nil {
		return nil, nil, err
	}
	params := diagnosticsParams{URIs: []string{}}
	for _, rel := range paths {
		if wp, err := ws.Resolve(rel); err == nil {
			params.URIs = append(params.URIs, string(uri.File(ws.Abs(wp))))
		}
	}
	docs, err := DiagnosticsRequest.ask(ctx, svc, params, diagnosticsTimeout, &svc.diagnostics)
	if err != nil {
		if errors.Is(err, errNotAnswered) {
			return nil, nil, session.ErrNoDiagnostics
		}
		return nil, nil, err
	}
	var out []session.Diagnostic
	versions := map[string]int32{}
	for _, doc := range docs {
		name, err := filenameOf(uri.URI(doc.URI))
		if err != nil {
			continue
		}
		wp, err := ws.Resolve(name)
		if err != nil {
			continue
		}
		if doc.Version != nil {
			versions[wp.String()] = *doc.Version
		}
		switch {
		case doc.Checked != nil && !*doc.Checked:
			versions[wp.String()] = session.VersionUnchecked
		case doc.Checked != nil || doc.Version != nil || len(doc.Diagnostics) > 0:
			// Something checks it: forget what an earlier wait learned.
			svc.unchecked.set(wp.String(), false)
		case svc.unchecked.has(wp.String()):
			versions[wp.String()] = session.VersionUnchecked
		}
		for _, d := range doc.Diagnostics {
			if d.Source == "agentls" {
				continue
			}
			sev := d.Severity
			if sev == 0 {
				sev = 1
			}
			out = append(out, session.Diagnostic{Path: wp.String(), Line: int(d.Range.Start.Line) + 1, Severity: sev, Message: d.Text(), Source: d.Source})
		}
	}
	return out, versions, nil
}
