package workspace

import (
	"context"
	"errors"
)

// DiskEditor applies edits to files on disk, atomically; see Apply.
type DiskEditor struct {
	w *Workspace
}

// DiskEditor returns the Editor that writes files on disk.
func (w *Workspace) DiskEditor() *DiskEditor { return &DiskEditor{w: w} }

// Apply applies edits on disk, all files or none.
func (d *DiskEditor) Apply(ctx context.Context, label string, edits []FileEdit) error {
	return errors.New("disk editor: not implemented yet")
}

var _ Editor = (*DiskEditor)(nil)
