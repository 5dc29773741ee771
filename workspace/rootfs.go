package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// File access inside the roots.
//
// Resolve checks a path by name, but a name can change meaning between the
// check and the open: a folder swapped for a symlink to /etc in between
// would lead outside. So no file of the workspace is opened by its absolute
// name. Each root holds an *os.Root (a handle on the folder, opened with the
// workspace, closed with it); every open, stat, create, rename and removal
// goes through it, and os.Root refuses, at the moment of the access, any
// name whose resolution leaves the folder, whatever was swapped in. A check
// that passed is therefore never the only thing standing between a tool and
// the outside.
//
// Symlinks inside the workspace are still followed as the OS would: locate
// resolves them by name to the root and relative name of the file they
// reach (that is only a name; the access itself then goes through that
// root's handle, so a swap after locate can make the access fail, never
// escape). This covers absolute links within the workspace and links from
// one root into another, which os.Root alone refuses.

// errLinkOutside is the refusal for a name that, followed through its
// symlinks, leaves every root. It never says where the link points: that
// would reveal the outside.
func errLinkOutside(p Path) error {
	return fmt.Errorf("%s is a link that leads outside the workspace: %w", p, ErrOutside)
}

// locate returns the root and the slash-separated name inside it that p
// reaches once its symlinks are followed ("." for the root itself).
func (w *Workspace) locate(p Path) (*root, string, error) {
	if p.IsZero() {
		return nil, "", fmt.Errorf("empty path: %w", ErrInvalidPath)
	}
	if p.r.fs == nil {
		return nil, "", fmt.Errorf("%s: the workspace is closed", p)
	}
	real, err := realPath(w.Abs(p))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", p, bareErr(err))
	}
	// The path's own root first: the common case, and the right one when
	// roots nest.
	if rel, ok := within(p.r.real, real); ok {
		return p.r, toSlash(rel), nil
	}
	for _, r := range w.rootList() {
		if rel, ok := within(r.real, real); ok && r.fs != nil {
			return r, toSlash(rel), nil
		}
	}
	return nil, "", errLinkOutside(p)
}

// isEscape reports os.Root's refusal of a name that leaves its folder
// (an unexported error whose text is fixed: "path escapes from parent").
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "escapes from parent")
}

// inRoot runs op on p through its own root first: os.Root follows the
// relative links inside the root by itself, which is the common case and
// needs no other lookup. Only when os.Root refuses the name as leaving the
// root (an absolute link inside the workspace, a link into another root, or
// really a link to the outside) is the name located and op run again on
// what locate found; a name leading outside is refused.
func (w *Workspace) inRoot(p Path, op func(r *root, rel string) error) error {
	if p.IsZero() {
		return fmt.Errorf("empty path: %w", ErrInvalidPath)
	}
	err := op(p.r, p.rel)
	if !isEscape(err) {
		return err
	}
	r, rel, lerr := w.locate(p)
	if lerr != nil {
		return lerr
	}
	return op(r, rel)
}

// rootErr turns an error of an os.Root access into one that names p only:
// the workspace-relative name, never the absolute one, and never a link's
// target.
func rootErr(p Path, err error) error {
	if err == nil {
		return nil
	}
	err = bareErr(err)
	if isEscape(err) {
		return errLinkOutside(p)
	}
	return err
}

// openRead opens p for reading through its root, without ever blocking (a
// named pipe opens at once and is then refused by its mode), and stats the
// open file.
func (w *Workspace) openRead(p Path) (*os.File, fs.FileInfo, error) {
	var f *os.File
	err := w.inRoot(p, func(r *root, rel string) (err error) {
		f, err = r.fs.OpenFile(osName(rel), openReadFlags, 0)
		return err
	})
	if err != nil {
		return nil, nil, rootErr(p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, rootErr(p, err)
	}
	return f, fi, nil
}

// Open opens the regular file p for reading through the workspace root (a
// symlink swap cannot lead it outside). Named pipes, sockets, devices and
// folders are refused without blocking. The caller closes the file.
func (w *Workspace) Open(p Path) (*os.File, fs.FileInfo, error) {
	f, fi, err := w.openRead(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("open %s: %w", p, ErrNotExist)
		}
		return nil, nil, fmt.Errorf("open %s: %w", p, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("open %s: %w", p, ErrIsDir)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("open %s: it is %s, not a regular file: %w", p, fileKind(fi.Mode()), ErrBinary)
	}
	return f, fi, nil
}

// Stat describes p (following symlinks inside the workspace) through its
// root.
func (w *Workspace) Stat(p Path) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := w.inRoot(p, func(r *root, rel string) (err error) {
		fi, err = r.fs.Stat(osName(rel))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", p, rootErr(p, err))
	}
	return fi, nil
}

// Exists reports whether p names a file or folder inside the workspace at
// this moment, checked through its root: a name the index still lists but
// that now leads outside (a folder swapped for a link) does not exist.
func (w *Workspace) Exists(p Path) bool {
	_, err := w.Stat(p)
	return err == nil
}

// ReadDisk reads p from disk even when the editor has it open, with the
// checks of ReadFile.
func (w *Workspace) ReadDisk(p Path) (*File, error) {
	return w.readDisk(p)
}

// readBytes reads the regular file p through its root, at most max bytes.
func (w *Workspace) readBytes(p Path, max int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := w.openRead(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("it is %s, not a regular file", fileKind(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, bareErr(err)
	}
	if int64(len(data)) > max {
		return nil, nil, fmt.Errorf("%w: over %s", ErrTooLarge, humanSize(max))
	}
	return data, fi, nil
}

// dirOf is the parent of the slash-separated rel inside a root ("." at the top).
func dirOf(rel string) string { return path.Dir(rel) }

// osName turns a slash-separated name inside a root into the OS form os.Root takes.
func osName(rel string) string { return filepath.FromSlash(rel) }
