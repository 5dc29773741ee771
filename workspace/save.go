package workspace

import (
	"context"
	"fmt"
	"os"
)

// SaveBuffer writes the text of p's open buffer to disk, as the editor's
// save would (BOM kept), provided the disk still holds the text that
// hashes to diskHash; otherwise it fails with ErrStale and writes nothing.
// The caller decides that the buffer may be saved without the user.
func (w *Workspace) SaveBuffer(ctx context.Context, p Path, diskHash string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	abs := w.Abs(p)
	doc, ok := w.buffers.Get(abs)
	if !ok {
		return fmt.Errorf("save %s: the file is not open in the editor", p)
	}
	r, rel, err := w.locate(p)
	if err != nil {
		return fmt.Errorf("save %s: %w", p, err)
	}
	old, err := readRoot(r, rel, w.maxSize)
	if err != nil {
		return fmt.Errorf("save %s: %w", p, bareErr(err))
	}
	disk, err := w.ReadDisk(p)
	if err != nil {
		return fmt.Errorf("save %s: %w", p, err)
	}
	if disk.Hash != diskHash {
		return fmt.Errorf("save %s: %w", p, ErrStale)
	}
	data := []byte(doc.Text)
	if disk.BOM {
		data = append([]byte("\uFEFF"), data...)
	}
	mode := os.FileMode(0o644)
	if fi, err := w.Stat(p); err == nil {
		mode = fi.Mode().Perm()
	}
	w.changes.expectEdit(abs, hashText(doc.Text), "save", true)
	if err := writeAtomic(r, rel, data, mode, old, false); err != nil {
		return fmt.Errorf("save %s: %w", p, err)
	}
	w.changes.record(p, OriginAgentls, Modified, "save")
	w.buffers.Saved(abs)
	return nil
}
