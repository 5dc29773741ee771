package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

func ptr[T any](v T) *T { return &v }

// initialize records the client's capabilities and roots, hands the
// initializationOptions to the settings handlers, and answers with the
// server's capabilities. It runs on the read loop, so no
// message after it is handled before the state is initialized.
func (s *Server) initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	if !s.state.CompareAndSwap(int32(stateNew), int32(stateInitialized)) {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "initialize was already received")
	}
	roots, rootErrs := rootsFromInitialize(p)

	s.mu.Lock()
	s.clientCaps = p.Capabilities
	s.clientName = p.ClientInfo.Name
	s.roots = roots
	s.mu.Unlock()

	for _, err := range rootErrs {
		s.log.Warn("workspace root ignored", "error", err)
	}
	s.settings(ctx, FromInitialize, json.RawMessage(p.InitializationOptions))
	s.log.Info("initialize", "client", p.ClientInfo.Name, "roots", roots)
	if s.onRoots != nil {
		s.onRoots(roots)
	}

	res := &protocol.InitializeResult{
		ServerInfo: protocol.ServerInfo{Name: ServerName, Version: protocol.NewOptional(s.version)},
		Capabilities: protocol.ServerCapabilities{
			PositionEncoding: protocol.PositionEncodingKindUTF16,
			TextDocumentSync: &protocol.TextDocumentSyncOptions{
				OpenClose: ptr(true),
				Change:    ptr(protocol.TextDocumentSyncKindIncremental),
				Save:      &protocol.SaveOptions{IncludeText: ptr(false)},
			},
			ExecuteCommandProvider: protocol.ExecuteCommandOptions{Commands: s.commands.names()},
			Workspace: &protocol.WorkspaceOptions{
				WorkspaceFolders: &protocol.WorkspaceFoldersServerCapabilities{
					Supported:           ptr(true),
					ChangeNotifications: protocol.Boolean(true),
				},
			},
		},
	}
	if s.hover != nil && (s.offerHover == nil || s.offerHover(p.Capabilities)) {
		res.Capabilities.HoverProvider = protocol.Boolean(true)
		s.mu.Lock()
		s.hovers = true
		s.mu.Unlock()
	}
	if LiteralCodeActions(p.Capabilities) {
		res.Capabilities.CodeActionProvider = &protocol.CodeActionOptions{
			CodeActionKinds: []protocol.CodeActionKind{protocol.CodeActionKindQuickFix, protocol.CodeActionKindRefactor, protocol.CodeActionKindEmpty},
		}
	} else {
		res.Capabilities.CodeActionProvider = protocol.Boolean(true)
	}
	return res, nil
}

// literalCodeActions reports whether the client accepts CodeActionOptions
// (the spec allows them only with codeActionLiteralSupport).
func LiteralCodeActions(c protocol.ClientCapabilities) bool {
	return c.TextDocument != nil && c.TextDocument.CodeAction != nil &&
		len(c.TextDocument.CodeAction.CodeActionLiteralSupport.CodeActionKind.ValueSet) > 0
}

func (s *Server) initialized(context.Context, *protocol.InitializedParams) error {
	s.log.Debug("initialized")
	return nil
}

// shutdown moves to the shut-down state: from now on only exit is accepted.
func (s *Server) shutdown(context.Context) error {
	s.state.Store(int32(stateShutdown))
	s.log.Info("shutdown")
	return nil
}

// filenameOf decodes a file URI into an absolute, cleaned OS path. Other
// schemes (untitled:, git:, ...) and relative paths are errors: documents
// are keyed by file name and roots must be absolute.
func Filename(u uri.URI) (string, error) {
	if !u.IsFile() {
		return "", fmt.Errorf("%q is not a file URI", string(u))
	}
	path := u.FsPath()
	if path == "" || !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q does not name an absolute path", string(u))
	}
	return filepath.Clean(path), nil
}

// rootsFromInitialize takes the workspace roots from workspaceFolders when
// the client sent them, else from rootUri, else from rootPath.
func rootsFromInitialize(p *protocol.InitializeParams) (roots []string, errs []error) {
	set := map[string]bool{}
	if folders, ok := p.WorkspaceFolders.Get(); ok && len(folders) > 0 {
		for _, f := range folders {
			name, err := Filename(f.URI)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			set[name] = true
		}
	} else if p.RootURI != nil && *p.RootURI != "" {
		name, err := Filename(*p.RootURI)
		if err != nil {
			errs = append(errs, err)
		} else {
			set[name] = true
		}
	} else if path, ok := p.RootPath.Get(); ok && path != "" {
		if filepath.IsAbs(path) {
			set[filepath.Clean(path)] = true
		} else {
			errs = append(errs, fmt.Errorf("rootPath %q is not absolute", path))
		}
	}
	return sortedKeys(set), errs
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *Server) didChangeWorkspaceFolders(_ context.Context, p *protocol.DidChangeWorkspaceFoldersParams) error {
	s.mu.Lock()
	set := map[string]bool{}
	for _, r := range s.roots {
		set[r] = true
	}
	var errs []error
	for _, f := range p.Event.Removed {
		if name, err := Filename(f.URI); err == nil {
			delete(set, name)
		}
	}
	for _, f := range p.Event.Added {
		name, err := Filename(f.URI)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set[name] = true
	}
	s.roots = sortedKeys(set)
	roots := append([]string(nil), s.roots...)
	s.mu.Unlock()
	for _, err := range errs {
		s.log.Warn("workspace folder ignored", "error", err)
	}
	s.log.Info("workspace folders changed", "roots", roots)
	if s.onRoots != nil {
		s.onRoots(roots)
	}
	return nil
}
