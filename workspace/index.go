package workspace

import (
	"context"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
)

// index is one root's file list. (First version: a sequential walk; the
// compact, parallel, ignore-aware version replaces it.)
type index struct {
	snap atomic.Pointer[snapshot]
}

type snapshot struct {
	paths []string
}

func buildIndex(ctx context.Context, r *root, exclude []string, wt *watcher, log *slog.Logger) (*index, error) {
	var paths []string
	err := filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == StateDirName || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(r.dir, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	idx := &index{}
	idx.snap.Store(&snapshot{paths: paths})
	return idx, nil
}

// Files lists every indexed file, sorted (the primary root first).
func (w *Workspace) Files() []Path {
	var out []Path
	for _, r := range w.rootList() {
		for _, p := range r.idx.snap.Load().paths {
			out = append(out, r.path(p))
		}
	}
	return out
}

// Glob matches pattern (doublestar syntax) against the indexed files.
func (w *Workspace) Glob(pattern string) ([]Path, error) {
	var out []Path
	for _, p := range w.Files() {
		if strings.HasSuffix(p.String(), strings.TrimPrefix(pattern, "**/*")) {
			out = append(out, p)
		}
	}
	return out, nil
}
