package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// LanguageServer is how one language's server is started (setting
// languageServers): a user-level setting, since it names a program to run.
type LanguageServer struct {
	Command               string          `json:"command"`
	Args                  []string        `json:"args,omitempty"`
	InitializationOptions json.RawMessage `json:"initializationOptions,omitempty"`
}

// LanguageServers give a task tools that ask language servers (definition,
// references, rename_symbol, ...) and, for faces whose editor shares no
// diagnostics, the errors after an edit. Package langserver implements it;
// a face passes it in Options, since the host (like the agent) depends on
// no LSP library.
type LanguageServers interface {
	// Tools returns the task's language tools; none when no source is
	// available (no server installed for the workspace's languages and an
	// editor that forwards nothing).
	Tools(env LanguageEnv) []tools.Tool
	// Diagnostics returns the diagnostics of paths (workspace-relative) for
	// their current text, from agentls's own servers; each answer is for
	// the file's current text (the servers are given it and waited for).
	Diagnostics(ctx context.Context, env LanguageEnv, paths []string) ([]Diagnostic, error)
	// Close stops every server.
	Close() error
}

// LanguageEnv is what the language tools of one task act on.
type LanguageEnv struct {
	Workspace *workspace.Workspace
	Editor    workspace.Editor // the task's editor (guarded, recorded for undo)
	Approver  tools.Approver
	Settings  Settings
	// Forward asks the editor's own language servers (the face's
	// LSPForwarder); nil when the face has none.
	Forward func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ErrNotForwarded is the error of an LSPForwarder whose editor cannot
// forward (no plugin, or a plugin without agentls/lsp): it is not asked
// again in the task.
var ErrNotForwarded = errors.New("the editor does not forward requests to its language servers")

// LSPForwarder is a Port whose editor forwards LSP requests to the
// language servers it runs (the agentls/lsp request of docs/lsp.md). It
// returns "null" when none of them serves the request.
type LSPForwarder interface {
	ForwardLSP(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// serverDiagnostics is the DiagnosticsSource of a port whose editor shares
// none: agentls's own language servers.
type serverDiagnostics struct {
	ls  LanguageServers
	env LanguageEnv
}

func (s serverDiagnostics) Diagnostics(ctx context.Context, paths []string) ([]Diagnostic, map[string]int32, error) {
	ds, err := s.ls.Diagnostics(ctx, s.env, paths)
	return ds, nil, err
}

// fresh: each answer is for the file's current text already.
func (serverDiagnostics) fresh() bool { return true }

// checkLanguageServers validates the languageServers setting.
func checkLanguageServers(v *map[string]LanguageServer) error {
	for lang, c := range *v {
		c.Command = strings.TrimSpace(c.Command)
		if c.Command == "" {
			return fmt.Errorf("%q has no command", lang)
		}
		if len(c.InitializationOptions) > 0 && !json.Valid(c.InitializationOptions) {
			return fmt.Errorf("%q: initializationOptions is not JSON", lang)
		}
		(*v)[lang] = c
	}
	return nil
}

// languageServerWidenings: a language server setting that differs from
// the user's start-up settings runs another program: it needs consent.
func languageServerWidenings(base, s Settings) []string {
	var out []string
	for _, lang := range slices.Sorted(maps.Keys(s.LanguageServers)) {
		c := s.LanguageServers[lang]
		b, ok := base.LanguageServers[lang]
		if !ok || b.Command != c.Command || !slices.Equal(b.Args, c.Args) || string(b.InitializationOptions) != string(c.InitializationOptions) {
			out = append(out, fmt.Sprintf("languageServers.%s %q", lang, strings.Join(append([]string{c.Command}, c.Args...), " ")))
		}
	}
	return out
}
