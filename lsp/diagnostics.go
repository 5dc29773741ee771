package lsp

import (
	"path/filepath"
	"sync"
	"time"
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
