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
	"strings"
	"unicode/utf8"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ReadFile reads p: the editor's open buffer when there is one (its unsaved
// text and version), else the file on disk. Disk files must be UTF-8 (a BOM
// is stripped and remembered), at most Options.MaxFileSize bytes, and not
// binary; otherwise the error wraps ErrTooLarge, ErrBinary, ErrNotExist or
// ErrIsDir and says why.
func (w *Workspace) ReadFile(ctx context.Context, p Path) (*File, error) {
	if p.IsZero() {
		return nil, fmt.Errorf("read: empty path: %w", ErrInvalidPath)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs := w.Abs(p)
	if doc, ok := w.buffers.Get(abs); ok {
		return &File{
			Path: p, Text: doc.Text, FromBuffer: true, Version: doc.Version,
			Hash: hashText(doc.Text), CRLF: strings.Contains(doc.Text, "\r\n"),
			Size: int64(len(doc.Text)),
		}, nil
	}
	return readDisk(p, abs, w.maxSize)
}

// readDisk reads and checks the file at abs.
func readDisk(p Path, abs string, maxSize int64) (*File, error) {
	f, err := os.Open(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", p, ErrNotExist)
		}
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("read %s: %w; list it instead", p, ErrIsDir)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file (%s): %w", p, fi.Mode().Type(), ErrBinary)
	}
	if fi.Size() > maxSize {
		return nil, fmt.Errorf("read %s: %w: %s (%d bytes), over the %s limit", p, ErrTooLarge, humanSize(fi.Size()), fi.Size(), humanSize(maxSize))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("read %s: %w: more than %s (it grew while being read)", p, ErrTooLarge, humanSize(maxSize))
	}
	text, bom, err := decodeText(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return &File{
		Path: p, Text: text, Hash: hashText(text), BOM: bom,
		CRLF: strings.Contains(text, "\r\n"), Size: int64(len(data)),
	}, nil
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
