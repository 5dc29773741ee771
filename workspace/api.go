package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Path is a resolved, clean, slash-separated path relative to a workspace
// root. Only (*Workspace).Resolve and the file index make one, so an
// unresolved path cannot reach a tool. Path values are comparable and may be
// used as map keys.
type Path struct {
	r   *root  // the root the path lives in (immutable)
	rel string // slash-separated, relative to the root; "." for the root itself
}

// String is the one form every tool prints: "a/b.go". In a multi-root
// workspace, files of roots after the first are prefixed with that root's
// folder name ("lib/x.go").
func (p Path) String() string {
	if p.r == nil || p.r.name == "" {
		return p.rel
	}
	if p.rel == "." {
		return p.r.name
	}
	return p.r.name + "/" + p.rel
}

// IsZero reports whether p is the zero Path (resolved from nothing).
func (p Path) IsZero() bool { return p.r == nil }

// Rel is the path relative to its own root, without any root-name prefix.
func (p Path) Rel() string { return p.rel }

// Root is the absolute OS path of the root p lives in.
func (p Path) Root() string {
	if p.r == nil {
		return ""
	}
	return p.r.dir
}

// File is the text of one file as read, with what a later edit is checked
// against.
type File struct {
	Path       Path
	Text       string // BOM stripped; line endings as stored
	FromBuffer bool   // read from the editor's unsaved buffer
	// FromClient: the text the editor answered for (Buffers.SetClientReader),
	// saved or not; FromBuffer stays false (the editor holds no document
	// agentls tracks, and writes ask as writes to disk do).
	FromClient bool
	Version    int32  // the editor's version when FromBuffer
	Hash       string // of Text: what a later edit is checked against
	BOM, CRLF  bool
	Size       int64 // bytes on disk (or of the buffer text)
}

// Errors returned by the workspace; test for them with errors.Is.
var (
	// ErrOutside reports a path outside every workspace root.
	ErrOutside = errors.New("outside the workspace")
	// ErrNotExist reports a missing file; it wraps fs.ErrNotExist.
	ErrNotExist = fmt.Errorf("no such file: %w", fs.ErrNotExist)
	// ErrBinary reports content that is not UTF-8 text.
	ErrBinary = errors.New("binary file")
	// ErrTooLarge reports a file over Options.MaxFileSize; the message gives the size.
	ErrTooLarge = errors.New("file too large")
	// ErrStale reports an edit whose base no longer matches the file.
	ErrStale = errors.New("file changed since you read it")
	// ErrInvalidPath reports input that is not a path at all (empty, NUL byte, bad URI).
	ErrInvalidPath = errors.New("invalid path")
	// ErrBadPattern reports a glob pattern that can never match.
	ErrBadPattern = errors.New("bad glob pattern")
	// ErrUnsaved reports a disk edit to a file the editor holds with
	// unsaved changes: it must go through the editor instead.
	ErrUnsaved = errors.New("file has unsaved changes in the editor")
	// ErrIsDir reports a directory where a file was expected.
	ErrIsDir = errors.New("is a directory")
)

// FileEdit is a set of text edits against one file as it was read.
type FileEdit struct {
	Path        Path
	BaseVersion int32  // File.Version when read from a buffer
	BaseHash    string // File.Hash; "" with Create
	Edits       []TextEdit
	Create      bool // a new file: Edits hold its whole text (one insert at 0:0)
}

// Editor applies edits: all files or none. The lsp package implements it with
// workspace/applyEdit (versioned documentChanges); DiskEditor writes files
// atomically.
type Editor interface {
	Apply(ctx context.Context, label string, edits []FileEdit) error
}
