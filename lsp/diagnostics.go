package lsp

import (
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
	// the plugin cannot tell (VS Code), and every edit waits.
	Checked *bool `json:"checked,omitempty"`
}
