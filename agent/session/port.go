package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/workspace"
)

// Port is a face's side of one task: how the user sees it, how its edits
// land and how the user is asked. The LSP server, the ACP agent and the
// command line each implement it; the host holds no other link to them.
//
// Beyond events, edits and questions, a Port declares what its editor can
// do for a task (save buffers, share diagnostics, ...): one method per
// capability, each answering an error that wraps ErrUnsupported where the
// face cannot, so the host never asserts a face's type. A face that lacks
// most capabilities embeds Unsupported and overrides what it can. To add a
// capability: add its method here and to Unsupported (answering
// ErrUnsupported), implement it in the faces that can, and have the host
// treat errors.Is(err, ErrUnsupported) as "this editor does not".
type Port interface {
	// Event receives the task's events in order (agent.Sink).
	agent.Sink
	// Editor returns how the task's edits reach ws: through the editor's
	// buffers or on disk. nil means on disk.
	Editor(ws *workspace.Workspace) workspace.Editor
	// AskUser renders one question (permission.Request) and returns the
	// user's choice. Only the permission service calls it, when the
	// settings and the remembered answers leave the decision to the user.
	permission.Asker
	// Save writes the editor's open buffers of paths (workspace-relative)
	// to disk. It returns the paths it could not save, with the reason.
	Save(ctx context.Context, paths []string) (failed map[string]string, err error)
	// Diagnostics returns the diagnostics the editor's language servers
	// publish for paths (workspace-relative) and, per path, the document
	// version they are for (0: unknown).
	Diagnostics(ctx context.Context, paths []string) (diags []Diagnostic, versions map[string]int32, err error)
	// ForwardLSP sends one LSP request to the editor's own language
	// servers (the agentls/lsp request of docs/lsp.md) and returns their
	// result ("null" when none serves it). With an empty method it sends
	// nothing and only says whether the face can forward at all (nil, or
	// ErrUnsupported).
	ForwardLSP(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ErrUnsupported is wrapped by the error of a Port capability the face
// (or its editor) does not offer.
var ErrUnsupported = errors.New("unsupported by this editor")

// Unsupported answers every capability of a Port with ErrUnsupported. A
// face embeds it and overrides the capabilities it has.
type Unsupported struct{}

// Save implements Port: unsupported.
func (Unsupported) Save(context.Context, []string) (map[string]string, error) {
	return nil, fmt.Errorf("save buffers: %w", ErrUnsupported)
}

// Diagnostics implements Port: unsupported.
func (Unsupported) Diagnostics(context.Context, []string) ([]Diagnostic, map[string]int32, error) {
	return nil, nil, fmt.Errorf("editor diagnostics: %w", ErrUnsupported)
}

// ForwardLSP implements Port: unsupported.
func (Unsupported) ForwardLSP(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("forward to the editor's language servers: %w", ErrUnsupported)
}
