package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DiskEditor applies edits to files on disk: for files the editor does not
// have open, and for the command-line mode. See Apply.
type DiskEditor struct {
	w *Workspace
}

// DiskEditor returns the Editor that writes files on disk.
func (w *Workspace) DiskEditor() *DiskEditor { return &DiskEditor{w: w} }

var _ Editor = (*DiskEditor)(nil)

// pendingWrite is one file of an Apply, checked and ready to write.
type pendingWrite struct {
	path    Path
	target  string // the OS path written: symlinks inside the roots are followed
	old     []byte // the bytes on disk before; nil when the file is created
	existed bool
	mode    fs.FileMode
	data    []byte // the new bytes (BOM included)
	text    string // the new text (no BOM)
	created []string
}

// Apply applies edits on disk, all files or none:
//
//   - every file is checked first: the Path is re-checked against the roots
//     (a symlink may have changed), the current text (the editor's buffer if
//     the file is open, else the disk) must still hash to BaseHash, or the
//     edit is refused with ErrStale ("file changed since read"); a file open
//     in the editor with unsaved changes is refused with ErrUnsaved (that
//     edit must go through the editor); Create refuses an existing file;
//   - then each file is written atomically (a temporary file in the same
//     folder, fsync, rename over the old one, permissions kept, BOM kept,
//     and CRLF kept: "\n" in the new text of a CRLF file is written "\r\n");
//   - if a write fails, the files already written are restored.
//
// Each file written is recorded as a change with origin OriginAgentls and
// label.
func (d *DiskEditor) Apply(ctx context.Context, label string, edits []FileEdit) error {
	if len(edits) == 0 {
		return nil
	}
	roots := d.w.rootList()
	seen := make(map[string]bool, len(edits))
	plan := make([]*pendingWrite, 0, len(edits))
	for _, e := range edits {
		pw, err := d.prepare(ctx, roots, e)
		if err != nil {
			return err
		}
		if seen[pw.target] {
			return fmt.Errorf("edit %s: the same file appears twice in one edit; merge its edits", e.Path)
		}
		seen[pw.target] = true
		plan = append(plan, pw)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("edit not applied: %w", err)
	}
	for i, pw := range plan {
		d.w.changes.expectEdit(pw.target, hashText(pw.text), label, true)
		if abs := d.w.Abs(pw.path); abs != pw.target {
			d.w.changes.expectEdit(abs, hashText(pw.text), label, true)
		}
		if err := d.write(pw); err != nil {
			rollback(plan[:i])
			return fmt.Errorf("edit %s: %w (no file was changed)", pw.path, err)
		}
	}
	for _, pw := range plan {
		kind := Modified
		if !pw.existed {
			kind = Created
			if r, rel, ok := lexicalRoot(roots, d.w.Abs(pw.path)); ok {
				r.idx.add(toSlash(rel))
			}
		}
		d.w.changes.record(pw.path, OriginAgentls, kind, label)
	}
	return nil
}

// prepare checks one FileEdit and computes its new content.
func (d *DiskEditor) prepare(ctx context.Context, roots []*root, e FileEdit) (*pendingWrite, error) {
	if e.Path.IsZero() {
		return nil, fmt.Errorf("edit: empty path: %w", ErrInvalidPath)
	}
	p, err := checkAbs(roots, e.Path.String(), d.w.Abs(e.Path))
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	target, err := realPath(d.w.Abs(p))
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", p, err)
	}
	pw := &pendingWrite{path: p, target: target, mode: 0o644}
	if e.Create {
		if _, err := os.Lstat(target); err == nil {
			return nil, fmt.Errorf("create %s: it already exists; read it and edit it instead: %w", p, fs.ErrExist)
		}
		if _, ok := d.w.buffers.Get(d.w.Abs(p)); ok {
			return nil, fmt.Errorf("create %s: it is open in the editor: %w", p, fs.ErrExist)
		}
		if parent := fileParent(p, target); parent != "" {
			return nil, fmt.Errorf("create %s: %s is a file, not a folder; choose another path", p, parent)
		}
		text, err := ApplyEdits("", e.Edits)
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", p, err)
		}
		pw.text, pw.data = text, []byte(text)
		return pw, nil
	}
	cur, err := d.w.ReadFile(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	if e.BaseHash == "" {
		return nil, fmt.Errorf("edit %s: no base hash: read the file before editing it", p)
	}
	if cur.Hash != e.BaseHash || cur.FromBuffer && e.BaseVersion != 0 && cur.Version != e.BaseVersion {
		where := "on disk"
		if cur.FromBuffer {
			where = fmt.Sprintf("in the editor (now version %d)", cur.Version)
		}
		return nil, fmt.Errorf("edit %s: %w: it was changed %s after it was read; read it again and redo the edit", p, ErrStale, where)
	}
	disk := cur
	if cur.FromBuffer {
		disk, err = readDisk(p, target, d.w.maxSize)
		if err != nil {
			return nil, fmt.Errorf("edit: %w", err)
		}
		if disk.Hash != cur.Hash {
			return nil, fmt.Errorf("edit %s: %w; apply it through the editor or save the file first", p, ErrUnsaved)
		}
	}
	edits := e.Edits
	if disk.CRLF {
		edits = make([]TextEdit, len(e.Edits))
		for i, te := range e.Edits {
			te.NewText = toCRLF(te.NewText)
			edits[i] = te
		}
	}
	text, err := ApplyEdits(disk.Text, edits)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", p, err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", p, err)
	}
	old, err := readRegular(target, d.w.maxSize+int64(len(utf8BOM)))
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", p, bareErr(err))
	}
	pw.existed, pw.old, pw.mode, pw.text = true, old, fi.Mode().Perm(), text
	if disk.BOM {
		pw.data = append(append([]byte(nil), utf8BOM...), text...)
	} else {
		pw.data = []byte(text)
	}
	return pw, nil
}

// failWrite, when set (by tests), is called before each file is written;
// an error it returns fails that write.
var failWrite func(target string) error

// write writes one prepared file atomically, creating missing folders.
func (d *DiskEditor) write(pw *pendingWrite) error {
	if failWrite != nil {
		if err := failWrite(pw.target); err != nil {
			return err
		}
	}
	dir := filepath.Dir(pw.target)
	if !pw.existed {
		created, err := mkdirAll(dir)
		pw.created = created
		if err != nil {
			return fmt.Errorf("create its folder: %w", bareErr(err))
		}
	}
	return writeAtomic(pw.target, pw.data, pw.mode)
}

// rollback restores the files already written, newest first.
func rollback(done []*pendingWrite) {
	for i := len(done) - 1; i >= 0; i-- {
		pw := done[i]
		if pw.existed {
			_ = writeAtomic(pw.target, pw.old, pw.mode)
			continue
		}
		_ = os.Remove(pw.target)
		for j := len(pw.created) - 1; j >= 0; j-- {
			_ = os.Remove(pw.created[j])
		}
	}
}

// tempMarker is part of the name of every temporary file agentls writes;
// the index never lists such files.
const tempMarker = ".agentls-tmp-"

// writeAtomic replaces path with data: a temporary file in the same folder,
// fsynced, then renamed over path, then the folder fsynced. A reader, or a
// crash at any moment, sees the old file or the new one, never a mix.
func writeAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempMarker+"*")
	if err != nil {
		return fmt.Errorf("write: %w", bareErr(err))
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write: %w", bareErr(err))
	}
	if err = f.Chmod(mode); err != nil {
		return fmt.Errorf("write: %w", bareErr(err))
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write: %w", bareErr(err))
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write: %w", bareErr(err))
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write: %w", bareErr(err))
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: some file systems refuse to fsync a folder
		d.Close()
	}
	return nil
}

// mkdirAll is os.MkdirAll that returns the folders it created, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return created, err
		}
		created = append(created, missing[i])
	}
	return created, nil
}

// toCRLF turns every "\n" not already preceded by "\r" into "\r\n".
func toCRLF(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + strings.Count(s, "\n"))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
