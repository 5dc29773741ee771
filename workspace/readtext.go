package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// TextReader reads workspace files as the tools see them (an open buffer
// first, then the disk); *Workspace satisfies it.
type TextReader interface {
	ReadFile(ctx context.Context, p Path) (*File, error)
	Resolve(input string) (Path, error)
}

// ReadText reads a workspace-relative file through files, or from disk
// under root when files is nil. A missing file is (exists false, nil).
func ReadText(ctx context.Context, files TextReader, root, path string) (text string, exists bool, err error) {
	if files == nil {
		if root == "" {
			return "", false, errors.New("no workspace to read it from")
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return string(b), true, nil
	}
	p, err := files.Resolve(path)
	if err != nil {
		return "", false, err
	}
	f, err := files.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return f.Text, true, nil
}
