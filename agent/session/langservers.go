package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

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
	// unchecked are the paths no server checks (no server for their
	// language, or it could not start or answer): nothing is known of
	// their errors.
	Diagnostics(ctx context.Context, env LanguageEnv, paths []string) (diags []Diagnostic, unchecked []string, err error)
	// Close stops every server.
	Close() error
}

// LanguageEnv is what the language tools of one task act on.
type LanguageEnv struct {
	Workspace *workspace.Workspace
	Editor    workspace.Editor // the task's editor (guarded, recorded for undo)
	Approver  tools.Approver
	Settings  Settings
	// Forward asks the editor's own language servers (Port.ForwardLSP:
	// an error wrapping ErrUnsupported when the face cannot); nil for none.
	Forward func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// serverDiagnostics is the DiagnosticsSource of a port whose editor shares
// none: agentls's own language servers.
type serverDiagnostics struct {
	ls  LanguageServers
	env LanguageEnv
}

func (s serverDiagnostics) Diagnostics(ctx context.Context, paths []string) ([]Diagnostic, map[string]int32, error) {
	ds, unchecked, err := s.ls.Diagnostics(ctx, s.env, paths)
	if err != nil {
		return nil, nil, err
	}
	versions := map[string]int32{}
	for _, p := range unchecked {
		versions[p] = VersionUnchecked
	}
	return ds, versions, nil
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

// ReportLiner is the Data of an edit tool's result that has a line for the
// task's report: a rename_symbol says what it renamed, via which server,
// and every file it touched.
type ReportLiner interface{ ReportLine() string }

// editLog keeps the report lines of a task's edits.
type editLog struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *editLog) section() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return "\n## Renames\n\n" + strings.Join(l.lines, "\n") + "\n"
}

// reportedTool is an edit tool whose results with a report line
// (ReportLiner) are listed in the task's report.
type reportedTool struct {
	tools.Tool
	log *editLog
}

func (t reportedTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	res, err := t.Tool.Run(ctx, args)
	if rl, ok := res.Data.(ReportLiner); ok && err == nil && !res.IsError {
		t.log.mu.Lock()
		t.log.lines = append(t.log.lines, "- "+rl.ReportLine())
		t.log.mu.Unlock()
	}
	return res, err
}
