package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Indexed reports whether p is a file of the workspace's file index: not
// excluded by the default exclude list, a .gitignore, an .ignore file or
// .git/info/exclude (the files the user keeps out of the agent's sight),
// and not a link that leads outside the workspace.
func (w *Workspace) Indexed(p Path) bool {
	r, rel, err := w.locate(p)
	if err != nil || r.idx == nil {
		return false
	}
	r.idx.wait()
	_, ok := r.idx.snap.Load().find(rel)
	return ok
}

// MayHold reports whether the workspace-relative input may name a file:
// false only when no open buffer holds it and nothing exists at any place
// it may name, joined lexically to its root (one Lstat each, no symlink
// resolution). A cheap "surely not there" before Resolve and a read, for
// callers that probe many names that mostly do not exist; true says
// nothing of whether reading it is allowed.
func (w *Workspace) MayHold(input string) bool {
	roots := w.rootList()
	if len(roots) == 0 {
		return false
	}
	s, err := normalizeInput(input, goos)
	if err != nil || isAbsSlash(s, goos) {
		return true // Resolve decides
	}
	for _, c := range relCandidates(roots, s) {
		abs := filepath.Join(c.r.dir, filepath.FromSlash(c.rel))
		if _, ok := w.buffers.Get(abs); ok {
			return true
		}
		// ENOTDIR: a file stands where a folder of the name would be
		// ("a.go/AGENTS.md"), so nothing is there either.
		if _, err := os.Lstat(abs); !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return true
		}
	}
	return false
}
