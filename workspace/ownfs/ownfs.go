// Package ownfs opens agentls's own files (its log, its user-level state,
// and the workspace's .agentls folder) without following links.
//
// A folder of agentls's own is opened from a trusted base (a folder the
// user chose: the workspace root, the user's state or configuration
// folder) one name at a time, each with O_NOFOLLOW: a link at any name
// below the base is refused (ErrLink), at the moment of the access, never
// followed. Files are created and opened in such a folder the same way, a
// file with more than one hard link is refused for writing, and
// replacements are renames inside the folder's handle. Whatever a
// repository shipped or a confined program swapped in, agentls's writes
// land in the folder it opened or nowhere.
package ownfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrLink is the refusal of a name that is a link (or of a file with
// several hard links) where agentls keeps its own files.
var ErrLink = errors.New("is a link; agentls does not write its own files through links")

// ErrNotPrivate is the refusal of a folder that another user owns or that
// others may write.
var ErrNotPrivate = errors.New("is not a private folder of this user")

// Dir is a folder of agentls's own, held open: every access below it goes
// through its handle.
type Dir struct {
	f    *os.File
	path string
}

// Path is the folder's path as opened (for messages and for programs that
// can only take a path, such as SQLite).
func (d *Dir) Path() string { return d.path }

// Close closes the folder's handle.
func (d *Dir) Close() error { return d.f.Close() }

// Open opens the folder rel (slash-separated, relative) below base,
// following no link below base; with create, missing folders are made
// with mode perm. base itself is opened as the OS resolves it.
func Open(base, rel string, create bool, perm os.FileMode) (*Dir, error) {
	b, err := os.Open(base)
	if err != nil {
		return nil, err
	}
	root := &Dir{f: b, path: filepath.Clean(base)}
	if rel == "" || rel == "." {
		return root, nil
	}
	defer root.Close()
	return root.OpenDir(rel, create, perm)
}

// OpenDir opens the folder rel below d, following no link; with create,
// missing folders are made with mode perm.
func (d *Dir) OpenDir(rel string, create bool, perm os.FileMode) (*Dir, error) {
	parts, err := split(rel)
	if err != nil {
		return nil, err
	}
	cur := d.f
	path := d.path
	for i, name := range parts {
		next, err := openDirAt(cur, name, create, perm)
		if i > 0 {
			cur.Close()
		}
		path = filepath.Join(path, name)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		cur = next
	}
	if cur == d.f { // rel was "."
		return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrInvalid}
	}
	return &Dir{f: cur, path: path}, nil
}

// OpenFile opens the file rel below d with flag and perm, following no
// link at any of its names. The file must be a regular file; opened for
// writing, it must have a single hard link.
func (d *Dir) OpenFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	parent, name, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	if parent != d {
		defer parent.Close()
	}
	f, err := openFileAt(parent.f, name, flag, perm)
	p := filepath.Join(parent.path, name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file: %w", os.ErrInvalid)
	}
	if err == nil && flag&(os.O_WRONLY|os.O_RDWR) != 0 && links(fi) > 1 {
		err = ErrLink
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return f, nil
}

// ReadFile reads the file rel below d, following no link.
func (d *Dir) ReadFile(rel string) ([]byte, error) {
	f, err := d.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile replaces the file rel below d with data, atomically: a new
// file beside it (created exclusively, never through a link), synced, then
// renamed over rel inside d's handle. A link at rel is replaced, never
// followed.
func (d *Dir) WriteFile(rel string, data []byte, perm os.FileMode) error {
	parent, name, err := d.parent(rel)
	if err != nil {
		return err
	}
	if parent != d {
		defer parent.Close()
	}
	tmp := fmt.Sprintf(".%s.tmp-%d", name, os.Getpid())
	_ = unlinkAt(parent.f, tmp)
	f, err := parent.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = renameAt(parent.f, tmp, name)
	}
	if err != nil {
		_ = unlinkAt(parent.f, tmp)
		return &os.PathError{Op: "write", Path: filepath.Join(parent.path, name), Err: err}
	}
	return nil
}

// Rename renames oldRel to newRel, both below d (in the same folder or
// not), inside d's handle: a link at newRel is replaced, never followed.
func (d *Dir) Rename(oldRel, newRel string) error {
	op, on, err := d.parent(oldRel)
	if err != nil {
		return err
	}
	if op != d {
		defer op.Close()
	}
	np, nn, err := d.parent(newRel)
	if err != nil {
		return err
	}
	if np != d {
		defer np.Close()
	}
	if err := renameAt2(op.f, on, np.f, nn); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(op.path, on), New: filepath.Join(np.path, nn), Err: err}
	}
	return nil
}

// Remove removes the file (or empty folder) rel below d; a link there is
// removed itself.
func (d *Dir) Remove(rel string) error {
	parent, name, err := d.parent(rel)
	if err != nil {
		return err
	}
	if parent != d {
		defer parent.Close()
	}
	if err := unlinkAt(parent.f, name); err != nil {
		return &os.PathError{Op: "remove", Path: filepath.Join(parent.path, name), Err: err}
	}
	return nil
}

// Lstat describes rel below d without following a link at any of its
// names.
func (d *Dir) Lstat(rel string) (os.FileInfo, error) {
	parent, name, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	if parent != d {
		defer parent.Close()
	}
	return lstatAt(parent, name)
}

// CheckNoLinks refuses d when any of names (relative to d) is a link or,
// for a file, has more than one hard link. Names that do not exist are
// fine.
func (d *Dir) CheckNoLinks(names ...string) error {
	for _, n := range names {
		fi, err := d.Lstat(n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 || (fi.Mode().IsRegular() && links(fi) > 1) {
			return &os.PathError{Op: "open", Path: filepath.Join(d.path, filepath.FromSlash(n)), Err: ErrLink}
		}
	}
	return nil
}

// parent opens the folder holding rel (d itself for a single name) and
// returns it with rel's last name.
func (d *Dir) parent(rel string) (*Dir, string, error) {
	parts, err := split(rel)
	if err != nil {
		return nil, "", err
	}
	if len(parts) == 1 {
		return d, parts[0], nil
	}
	p, err := d.OpenDir(strings.Join(parts[:len(parts)-1], "/"), false, 0)
	if err != nil {
		return nil, "", err
	}
	return p, parts[len(parts)-1], nil
}

// split checks rel is relative, clean and stays below its folder.
func split(rel string) ([]string, error) {
	rel = filepath.ToSlash(rel)
	if rel == "" || strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("%q: not a relative name: %w", rel, os.ErrInvalid)
	}
	var out []string
	for _, p := range strings.Split(rel, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf("%q: leaves its folder: %w", rel, os.ErrInvalid)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q: names no file: %w", rel, os.ErrInvalid)
	}
	return out, nil
}

// Private opens the folder name in base (the temporary folder, which
// others may write), creating it with mode 0700 when missing. It must be
// a folder (not a link), owned by this user, that no one else may write
// or read; anything else is refused (ErrNotPrivate, ErrLink), never
// repaired or followed.
func Private(base, name string) (*Dir, error) {
	d, err := Open(base, name, true, 0o700)
	if err != nil {
		return nil, err
	}
	fi, err := d.f.Stat()
	if err != nil {
		d.Close()
		return nil, err
	}
	uid, ok := owner(fi)
	if ok && (uid != os.Getuid() || fi.Mode().Perm()&0o077 != 0) {
		d.Close()
		return nil, &os.PathError{Op: "open", Path: d.path, Err: ErrNotPrivate}
	}
	return d, nil
}

// ReadDir lists the folder rel below d ("." for d itself), following no
// link. Each entry's Info is taken as it is listed, through the folder's
// handle (an *os.File opened relative to a handle would look its entries
// up by a path relative to the process's working folder).
func (d *Dir) ReadDir(rel string) ([]os.DirEntry, error) {
	dir := d
	if rel != "." && rel != "" {
		sub, err := d.OpenDir(rel, false, 0)
		if err != nil {
			return nil, err
		}
		defer sub.Close()
		dir = sub
	}
	f, err := openDirAt(dir.f, ".", false, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]os.DirEntry, 0, len(names))
	for _, n := range names {
		info, err := lstatAt(dir, n)
		if err != nil {
			continue // gone since it was listed
		}
		out = append(out, fs.FileInfoToDirEntry(info))
	}
	return out, nil
}
