package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ReadFile reads p: the editor's open buffer when there is one (its unsaved
// text and version), else the file on disk. Disk files must be UTF-8 (a BOM
// is stripped and remembered), at most Options.MaxFileSize bytes, and not
// binary; otherwise the error wraps ErrTooLarge, ErrBinary, ErrNotExist or
// ErrIsDir and says why.
//
// A clean buffer (its text is what the disk held when the editor opened or
// last saved it, or a text the disk held since, which the editor reloaded)
// does not hide the disk: when the disk has changed under it
// (a command, git, a formatter), the disk is returned, as a file read from
// disk (FromBuffer false). A buffer with the user's unsaved text always
// wins.
//
// A file no open document holds is asked of the editor first when it
// answers reads on demand (Buffers.SetClientReader): its text, saved or
// not, is the file's (FromClient).
func (w *Workspace) ReadFile(ctx context.Context, p Path) (*File, error) {
	if p.IsZero() {
		return nil, fmt.Errorf("read: empty path: %w", ErrInvalidPath)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs := w.Abs(p)
	doc, ok := w.buffers.Get(abs)
	if !ok {
		if text, asked := w.buffers.readClient(ctx, abs); asked {
			bom := strings.HasPrefix(text, "\ufeff")
			text = strings.TrimPrefix(text, "\ufeff")
			if int64(len(text)) > w.maxSize {
				return nil, fmt.Errorf("read %s: %w: the editor's text is %s, over the %s limit", p, ErrTooLarge, humanSize(int64(len(text))), humanSize(w.maxSize))
			}
			return &File{Path: p, Text: text, FromClient: true, Hash: hashText(text), BOM: bom,
				CRLF: strings.Contains(text, "\r\n"), Size: int64(len(text))}, nil
		}
		// The cursor is taken before the read: a change recorded after it,
		// even one made before the read, makes the snapshot count as stale.
		seq := w.Seq()
		f, err := w.readDisk(p)
		if err == nil {
			w.snaps.put(p, f.Text, seq)
		}
		return f, err
	}
	h := hashText(doc.Text)
	disk, err := w.readDisk(p)
	switch {
	case err == nil && disk.Hash == h:
		// The disk holds the buffer's text: clean from now on.
		w.buffers.setSavedHash(abs, doc.Version, h)
	case doc.clean(h) && err == nil:
		return disk, nil
	case doc.clean(h) && errors.Is(err, ErrNotExist):
		return nil, err
	}
	return &File{
		Path: p, Text: doc.Text, FromBuffer: true, Version: doc.Version,
		Hash: h, CRLF: strings.Contains(doc.Text, "\r\n"),
		Size: int64(len(doc.Text)),
	}, nil
}

// BufferStale reports whether the editor has p open with a clean buffer
// while the disk now holds other text: ReadFile returns the disk then, and
// an edit of p belongs on disk (the editor reloads a clean buffer from
// disk), not in the buffer.
func (w *Workspace) BufferStale(p Path) bool {
	doc, ok := w.buffers.Get(w.Abs(p))
	h := hashText(doc.Text)
	if !ok || !doc.clean(h) {
		return false
	}
	disk, err := w.readDisk(p)
	return err == nil && disk.Hash != h
}

// readDisk reads and checks the file p on disk, through its root.
func (w *Workspace) readDisk(p Path) (*File, error) {
	var f *File
	fromRead := false // the error is readDiskAt's own, already worded
	err := w.inRoot(p, func(r *root, rel string) (err error) {
		f, _, _, err = w.readDiskAt(p, r, rel)
		fromRead = err != nil && !isEscape(err)
		return err
	})
	if err != nil && !fromRead {
		if isEscape(err) {
			err = errLinkOutside(p)
		}
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return f, err
}

// readDiskAt reads and checks the file rel of r (the located p), and
// returns its raw bytes and mode too. os.Root's refusal of a name that
// leaves r is returned as is (see inRoot).
func (w *Workspace) readDiskAt(p Path, r *root, rel string) (*File, []byte, fs.FileInfo, error) {
	maxSize := w.maxSize
	f, err := r.fs.OpenFile(osName(rel), openReadFlags, 0)
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		if isEscape(err) {
			return nil, nil, nil, err // for inRoot to try the located name
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil, fmt.Errorf("read %s: %w", p, ErrNotExist)
		}
		if parent := w.fileParent(p); parent != "" {
			return nil, nil, nil, fmt.Errorf("read %s: %s is a file, not a folder: %w", p, parent, ErrNotExist)
		}
		return nil, nil, nil, fmt.Errorf("read %s: %w", p, rootErr(p, err))
	}
	defer f.Close()
	if fi.IsDir() {
		return nil, nil, nil, fmt.Errorf("read %s: %w; list it instead", p, ErrIsDir)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, nil, fmt.Errorf("read %s: it is %s, not a regular file: %w", p, fileKind(fi.Mode()), ErrBinary)
	}
	if fi.Size() > maxSize {
		return nil, nil, nil, fmt.Errorf("read %s: %w: %s (%d bytes), over the %s limit", p, ErrTooLarge, humanSize(fi.Size()), fi.Size(), humanSize(maxSize))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read %s: %w", p, bareErr(err))
	}
	if int64(len(data)) > maxSize {
		return nil, nil, nil, fmt.Errorf("read %s: %w: more than %s (it grew while being read)", p, ErrTooLarge, humanSize(maxSize))
	}
	text, bom, err := decodeText(data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read %s: %w", p, err)
	}
	return &File{
		Path: p, Text: text, Hash: hashText(text), BOM: bom,
		CRLF: strings.Contains(text, "\r\n"), Size: int64(len(data)),
	}, data, fi, nil
}

// openFile opens abs for reading without ever blocking (a named pipe opens
// at once and is then refused by its mode) and stats it. Only for files
// that are not the agent's to read (the index's .gitignore files); the
// agent's reads go through the roots.
func openFile(abs string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readRegular reads the regular file at abs, at most max bytes; anything
// else (a named pipe, a device, a socket, a folder) is refused without
// blocking.
func readRegular(abs string, max int64) ([]byte, error) {
	f, fi, err := openFile(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("it is %s, not a regular file", fileKind(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: over %s", ErrTooLarge, humanSize(max))
	}
	return data, nil
}

// fileKind names a non-regular file type for a message.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeDir != 0:
		return "a folder"
	}
	return "a special file (" + m.Type().String() + ")"
}

// bareErr drops the absolute path an *fs.PathError carries: messages name
// files by their workspace-relative path only.
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileParent names, workspace-relative, the parent folder of p that is
// really a file, which makes p impossible; "" when there is none. It looks
// through p's root.
func (w *Workspace) fileParent(p Path) string {
	if p.r == nil || p.r.fs == nil {
		return ""
	}
	for rel := path.Dir(p.rel); rel != "." && rel != "/"; rel = path.Dir(rel) {
		fi, err := p.r.fs.Stat(osName(rel))
		if err == nil {
			if fi.IsDir() {
				return ""
			}
			if p.r.name != "" {
				return p.r.name + "/" + rel
			}
			return rel
		}
	}
	return ""
}

// decodeText checks data is UTF-8 text and strips a BOM.
func decodeText(data []byte) (text string, bom bool, err error) {
	if bytes.HasPrefix(data, utf8BOM) {
		data, bom = data[len(utf8BOM):], true
	}
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		return "", false, fmt.Errorf("%w: UTF-16 text is not supported; convert it to UTF-8", ErrBinary)
	}
	head := data
	if len(head) > 8000 {
		head = head[:8000]
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return "", false, fmt.Errorf("%w: NUL byte at offset %d; binary files cannot be read or edited as text", ErrBinary, i)
	}
	if !utf8.Valid(data) {
		off := invalidUTF8(data)
		return "", false, fmt.Errorf("%w: not valid UTF-8 (first bad byte at offset %d); binary or another encoding", ErrBinary, off)
	}
	return string(data), bom, nil
}

func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// hashText is the hash File.Hash and FileEdit.BaseHash carry.
func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// HashText is the hash of text as File.Hash computes it, for editors that
// build a FileEdit from text they hold.
func HashText(text string) string { return hashText(text) }

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
