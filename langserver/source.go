package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.lsp.dev/uri"
)

// Source answers LSP requests about the workspace's documents: agentls's
// own servers (*Pool) or the editor's (Editor).
type Source interface {
	// Request sends method with params about file (an absolute path whose
	// current text is text) and decodes the answer into result; server
	// names who answered ("gopls", "the editor's servers").
	Request(ctx context.Context, file, text, method string, params, result any) (server string, err error)
	// WorkspaceRequest sends a request about no document (workspace/symbol)
	// and calls each with every answering server.
	WorkspaceRequest(ctx context.Context, method string, params any, each func(server string, decode func(result any) error)) error
	// Changed tells the servers that files changed on disk (a rename
	// applied).
	Changed(ctx context.Context, files []string)
}

// Forward sends one LSP request to the editor's language servers (the
// agentls/lsp request, answered by the editor plugin) and returns their
// raw result: "null" when none serves it. It returns an error wrapping
// ErrForwardUnsupported when the editor cannot forward at all.
type Forward func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// ErrForwardUnsupported is the error of a Forward whose editor has no
// plugin that forwards requests.
var ErrForwardUnsupported = errors.New("the editor does not forward requests to its language servers")

// Editor is source 1: the editor's running servers, asked through fwd,
// with fallback (agentls's own servers; nil: none) for what they do not
// answer.
type Editor struct {
	fwd      Forward
	fallback Source

	mu  sync.Mutex // guards off
	off bool       // the editor answered ErrForwardUnsupported: do not ask again
}

// NewEditor returns the source that asks the editor first.
func NewEditor(fwd Forward, fallback Source) *Editor { return &Editor{fwd: fwd, fallback: fallback} }

const editorServers = "the editor's language server"

func (e *Editor) forward(ctx context.Context, method string, params, result any) (bool, error) {
	e.mu.Lock()
	off := e.off
	e.mu.Unlock()
	if off {
		return false, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return false, err
	}
	raw, err := e.fwd(ctx, method, b)
	if errors.Is(err, ErrForwardUnsupported) {
		e.mu.Lock()
		e.off = true
		e.mu.Unlock()
		return false, nil
	}
	if err != nil {
		return false, &Error{Server: editorServers, Op: method, Err: err}
	}
	if noAnswer(raw) {
		return false, nil
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			return false, &Error{Server: editorServers, Op: method, Err: fmt.Errorf("unreadable answer: %w", err)}
		}
	}
	return true, nil
}

// noAnswer reports whether an editor's answer says nothing: null, an
// empty list (references, definitions, symbols) or a WorkspaceEdit that
// edits nothing. An editor that has no server for a file answers so (VS
// Code's rename without a Go extension answers {"changes": {}}): agentls's
// own servers are asked then, as they are for null.
func noAnswer(raw json.RawMessage) bool {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return len(raw) == 0
	}
	switch v := v.(type) {
	case nil:
		return true
	case []any:
		return len(v) == 0
	case map[string]any:
		_, changes := v["changes"]
		_, docChanges := v["documentChanges"]
		if !changes && !docChanges {
			return len(v) == 0
		}
		for _, k := range []string{"changes", "documentChanges"} {
			switch c := v[k].(type) {
			case map[string]any:
				for _, edits := range c {
					if es, ok := edits.([]any); !ok || len(es) > 0 {
						return false
					}
				}
			case []any:
				if len(c) > 0 {
					return false
				}
			case nil:
			default:
				return false
			}
		}
		return true
	}
	return false
}

func (e *Editor) Request(ctx context.Context, file, text, method string, params, result any) (string, error) {
	ok, err := e.forward(ctx, method, params, result)
	if ok {
		return editorServers, nil
	}
	if e.fallback == nil {
		if err == nil {
			err = &Error{Server: editorServers, Op: method, Err: errors.New("no server of the editor answered")}
		}
		return editorServers, err
	}
	server, ferr := e.fallback.Request(ctx, file, text, method, params, result)
	if ferr != nil && err != nil {
		// Both failed: say why the editor's answer was not used too.
		ferr = fmt.Errorf("%w; agentls's own server: %w", err, ferr)
	}
	return server, ferr
}

func (e *Editor) WorkspaceRequest(ctx context.Context, method string, params any, each func(string, func(any) error)) error {
	var raw json.RawMessage
	if ok, _ := e.forward(ctx, method, params, &raw); ok {
		each(editorServers, func(result any) error { return json.Unmarshal(raw, result) })
		return nil
	}
	if e.fallback == nil {
		return &Error{Server: editorServers, Op: method, Err: errors.New("no server of the editor answered")}
	}
	return e.fallback.WorkspaceRequest(ctx, method, params, each)
}

// Changed: the editor's servers watch the files themselves; agentls's own
// are told.
func (e *Editor) Changed(ctx context.Context, files []string) {
	if e.fallback != nil {
		e.fallback.Changed(ctx, files)
	}
}

// Changed sends workspace/didChangeWatchedFiles to every running server.
func (p *Pool) Changed(ctx context.Context, files []string) {
	p.mu.Lock()
	cs := make([]*client, 0, len(p.clients))
	for _, c := range p.clients {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	changes := make([]map[string]any, len(files))
	for i, f := range files {
		changes[i] = map[string]any{"uri": uri.File(f), "type": 2}
	}
	for _, c := range cs {
		_ = c.conn.Notify(ctx, "workspace/didChangeWatchedFiles", map[string]any{"changes": changes})
	}
}
