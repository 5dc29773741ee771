package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
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
	r       *root  // the root the file is written through
	rel     string // its name inside r, symlinks followed
	target  string // its OS path (for the change log and the watcher's echo)
	old     []byte // the bytes on disk before; nil when the file is created
	existed bool
	mode    fs.FileMode
	data    []byte // the new bytes (BOM included)
	text    string // the new text (no BOM)
	created []string
}

// fileLocks serializes the edits of one file across tasks: an Apply holds
// the lock of every file it writes, taken in sorted order so two Applies
// over the same files never deadlock.
type fileLocks struct {
	mu sync.Mutex           // guards m
	m  map[string]*fileLock // by root real path + "\x00" + name in the root
}

type fileLock struct {
	mu   sync.Mutex
	refs int // Applies holding or waiting for mu; the entry goes at 0
}

// lock takes the locks of keys (sorted, distinct) and returns the function
// that releases them.
func (l *fileLocks) lock(keys []string) (unlock func()) {
	held := make([]*fileLock, 0, len(keys))
	for _, k := range keys {
		l.mu.Lock()
		if l.m == nil {
			l.m = make(map[string]*fileLock)
		}
		fl := l.m[k]
		if fl == nil {
			fl = &fileLock{}
			l.m[k] = fl
		}
		fl.refs++
		l.mu.Unlock()
		fl.mu.Lock()
		held = append(held, fl)
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].mu.Unlock()
			l.mu.Lock()
			held[i].refs--
			if held[i].refs == 0 {
				delete(l.m, keys[i])
			}
			l.mu.Unlock()
		}
	}
}

// Apply applies edits on disk, all files or none:
//
//   - the files are located (symlinks inside the workspace followed; a link
//     that leads outside is refused) and locked: edits of one file by
//     several tasks are serialized, so two of them can never both succeed
//     from the same base;
//   - under the locks every file is checked: the current text (the
//     editor's buffer if the file is open, else the disk) must still hash
//     to BaseHash, or the edit is refused with ErrStale ("file changed
//     since you read it"); a file open in the editor with unsaved changes
//     is refused with ErrUnsaved (that edit must go through the editor);
//     Create refuses an existing file;
//   - then each file is written atomically through its root: a temporary
//     file in .agentls/tmp/ of that root, fsync, then the last check and
//     the move (place: on Linux a read lease, a re-read, an atomic swap
//     and a check of what was swapped out; elsewhere a re-read and a
//     rename); a save by another program at that moment makes the edit
//     ErrStale and keeps the save. A new file is linked into place, which
//     never replaces a file created meanwhile. Permissions, BOM and CRLF
//     are kept ("\n" in the new text of a CRLF file is written "\r\n");
//   - if a write fails, the files already written are restored.
//
// What remains: without a lease (another user's file, NFS, not Linux) a
// program that does not go through agentls and writes the file between
// the last read and the rename loses its write; the window is one read and
// one rename. Editors that have the file open go through their buffer,
// which Apply checks.
//
// Each file written is recorded as a change with origin OriginAgentls and
// label.
func (d *DiskEditor) Apply(ctx context.Context, label string, edits []FileEdit) error {
	if len(edits) == 0 {
		return nil
	}
	roots := d.w.rootList()
	type located struct {
		r   *root
		rel string
	}
	locs := make([]located, len(edits))
	keys := make([]string, 0, len(edits))
	seen := make(map[string]bool, len(edits))
	for i, e := range edits {
		if e.Path.IsZero() {
			return fmt.Errorf("edit: empty path: %w", ErrInvalidPath)
		}
		p, err := checkAbs(roots, e.Path.String(), d.w.Abs(e.Path))
		if err != nil {
			return fmt.Errorf("edit: %w", hideTarget(e.Path, err))
		}
		r, rel, err := d.w.locate(p)
		if err != nil {
			return fmt.Errorf("edit: %w", err)
		}
		key := r.real + "\x00" + rel
		if seen[key] {
			return fmt.Errorf("edit %s: the same file appears twice in one edit; merge its edits", e.Path)
		}
		seen[key] = true
		locs[i] = located{r, rel}
		keys = append(keys, key)
	}
	sort.Strings(keys)
	unlock := d.w.locks.lock(keys)
	defer unlock()

	plan := make([]*pendingWrite, 0, len(edits))
	for i, e := range edits {
		pw, err := d.prepare(ctx, e, locs[i].r, locs[i].rel)
		if err != nil {
			return err
		}
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
			if errors.Is(err, ErrStale) {
				return fmt.Errorf("edit %s: %w: another program wrote it while the edit was being made; read it again and redo the edit (no file was changed)", pw.path, err)
			}
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
		seq := d.w.changes.record(pw.path, OriginAgentls, kind, label)
		d.w.snaps.put(pw.path, pw.text, seq)
	}
	return nil
}

// hideTarget replaces a refusal that names where a symlink points with one
// that does not.
func hideTarget(p Path, err error) error {
	if errors.Is(err, ErrOutside) {
		return errLinkOutside(p)
	}
	return err
}

// prepare checks one FileEdit, at r/rel, and computes its new content. The
// file's lock is held.
func (d *DiskEditor) prepare(ctx context.Context, e FileEdit, r *root, rel string) (*pendingWrite, error) {
	p := e.Path
	pw := &pendingWrite{path: p, r: r, rel: rel, target: filepath.Join(r.dir, osName(rel)), mode: 0o644}
	if e.Create {
		if _, err := r.fs.Lstat(osName(rel)); err == nil {
			return nil, fmt.Errorf("create %s: it already exists; read it and edit it instead: %w", p, fs.ErrExist)
		}
		if _, ok := d.w.buffers.Get(d.w.Abs(p)); ok {
			return nil, fmt.Errorf("create %s: it is open in the editor: %w", p, fs.ErrExist)
		}
		if parent := d.w.fileParent(p); parent != "" {
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
	if err := CheckBase(e, cur); err != nil {
		return nil, err
	}
	disk, old, fi, err := d.w.readDiskAt(p, r, rel)
	if err != nil {
		if isEscape(err) {
			err = errLinkOutside(p)
		}
		return nil, fmt.Errorf("edit: %w", err)
	}
	if disk.Hash != cur.Hash {
		if cur.FromBuffer {
			return nil, fmt.Errorf("edit %s: %w; apply it through the editor or save the file first", p, ErrUnsaved)
		}
		// Read by name, then by the located name: changed in between.
		return nil, fmt.Errorf("edit %s: %w: it was changed on disk after it was read; read it again and redo the edit", p, ErrStale)
	}
	edits := editsFor(disk, e.Edits)
	text, err := ApplyEdits(disk.Text, edits)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", p, err)
	}
	pw.existed, pw.old, pw.mode, pw.text = true, old, fi.Mode().Perm(), text
	if disk.BOM {
		pw.data = append(append([]byte(nil), utf8BOM...), text...)
	} else {
		pw.data = []byte(text)
	}
	return pw, nil
}

// Test hooks. failWrite, when set, is called before each file is written;
// an error it returns fails that write. beforeRename, when set, is called
// after the temporary file is complete and before the last check.
var (
	failWrite    func(target string) error
	beforeRename func(target string)
)

// write writes one prepared file atomically, creating missing folders.
func (d *DiskEditor) write(pw *pendingWrite) error {
	if failWrite != nil {
		if err := failWrite(pw.target); err != nil {
			return err
		}
	}
	if !pw.existed {
		created, err := mkdirAll(pw.r, dirOf(pw.rel))
		pw.created = created
		if err != nil {
			return fmt.Errorf("create its folder: %w", rootErr(pw.path, err))
		}
		return writeAtomic(pw.r, pw.rel, pw.data, pw.mode, nil, true)
	}
	return writeAtomic(pw.r, pw.rel, pw.data, pw.mode, pw.old, false)
}

// rollback restores the files already written, newest first.
func rollback(done []*pendingWrite) {
	for i := len(done) - 1; i >= 0; i-- {
		pw := done[i]
		if pw.existed {
			_ = writeAtomic(pw.r, pw.rel, pw.old, pw.mode, nil, false)
			continue
		}
		_ = pw.r.fs.Remove(osName(pw.rel))
		for j := len(pw.created) - 1; j >= 0; j-- {
			_ = pw.r.fs.Remove(osName(pw.created[j]))
		}
	}
}

// writeAtomic replaces rel in r with data: a temporary file (see
// writeTemp), fsynced, then moved into place, then the folder fsynced. A
// reader, or a crash at any moment, sees the old file or the new one, never
// a mix.
//
// With create, rel must not exist: the file is linked into place, which
// fails if anything appeared there meanwhile. With want non-nil, the file
// must still hold exactly want when it is replaced, else the error wraps
// ErrStale and the file is left as the other writer made it (see place).
func writeAtomic(r *root, rel string, data []byte, mode fs.FileMode, want []byte, create bool) error {
	sameFolder := false
	for {
		tmp, err := writeTemp(r, rel, data, mode, sameFolder)
		if err != nil {
			return fmt.Errorf("write: %w", bareErr(err))
		}
		if beforeRename != nil {
			beforeRename(filepath.Join(r.dir, osName(rel)))
		}
		err = place(r, tmp, rel, data, want, create)
		// The temporary name is gone after a rename; after a link or a
		// swap it holds our copy or the old file: either way, not needed.
		_ = r.fs.Remove(osName(tmp))
		if err != nil {
			if isCrossDevice(err) && !sameFolder {
				// rel is on another file system than .agentls/ (a mount
				// inside the workspace): use a temporary file beside it.
				sameFolder = true
				continue
			}
			return err
		}
		if dir, err := r.fs.Open(osName(dirOf(rel))); err == nil {
			_ = dir.Sync() // best effort: some file systems refuse to fsync a folder
			dir.Close()
		}
		return nil
	}
}

// errNoExchange reports that the file system cannot swap two names
// atomically.
var errNoExchange = errors.New("no atomic exchange")

// place moves the complete temporary file tmp to rel after the last check:
// the file is read once more and must hold want; then, where the file
// system can, the two names are swapped and the file swapped out is
// checked again (exchangeChecked), which also catches a write that landed
// between that read and the swap; elsewhere it is a rename.
func place(r *root, tmp, rel string, data, want []byte, create bool) error {
	if create {
		err := r.fs.Link(osName(tmp), osName(rel))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fs.ErrExist):
			return fmt.Errorf("%w: it was created meanwhile", ErrStale)
		case isCrossDevice(err):
			return err
		}
		// No hard links on this file system: check, then rename.
		if _, err := r.fs.Lstat(osName(rel)); err == nil {
			return fmt.Errorf("%w: it was created meanwhile", ErrStale)
		}
	}
	if want != nil {
		cur, err := readRoot(r, rel, int64(len(want))+1)
		if err != nil || !bytes.Equal(cur, want) {
			return fmt.Errorf("%w: it changed on disk during the edit", ErrStale)
		}
		if err := exchangeChecked(r, tmp, rel, data, want); err != errNoExchange {
			return err
		}
	}
	if err := r.fs.Rename(osName(tmp), osName(rel)); err != nil {
		if isCrossDevice(err) {
			return err
		}
		return fmt.Errorf("write: %w", bareErr(err))
	}
	return nil
}

// readRoot reads the regular file rel of r, at most max bytes, without
// blocking on special files.
func readRoot(r *root, rel string, max int64) ([]byte, error) {
	f, err := r.fs.OpenFile(osName(rel), openReadFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("it is %s, not a regular file", fileKind(fi.Mode()))
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(limitReader(f, max))
	return b.Bytes(), err
}

// mkdirAll creates the folder rel of r and its missing parents through the
// root, and returns the folders it created, outermost first.
func mkdirAll(r *root, rel string) ([]string, error) {
	if rel == "." || rel == "" {
		return nil, nil
	}
	var created []string
	parts := strings.Split(rel, "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		err := r.fs.Mkdir(osName(d), 0o755)
		if err == nil {
			created = append(created, d)
			continue
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return created, err
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
