package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentls/agentls/tools/sandbox"
)

// ErrNotFound is returned by LookPath when no folder it searches holds
// the program.
var ErrNotFound = errors.New("executable file not found in the trusted PATH folders")

var lookCache sync.Map // "PATH\x00roots\x00name" -> string

// LookPath finds the program name the way Run does: a name with a slash
// is returned as it is; a bare name ("sh", "git") is searched in the
// absolute folders of this process's PATH, skipping relative entries
// ("", ".", "bin") and every folder inside the workspace roots, which a
// command (or the model's file tools) can write. The answer is cached for
// the same PATH and roots: later changes to a folder's contents are not
// looked at again, so a program planted later is not picked up either.
// Other packages that start programs through Run resolve names with it.
func LookPath(name string, roots []string) (string, error) {
	if name == "" {
		return "", errors.New("no program name")
	}
	if strings.ContainsRune(name, '/') {
		return name, nil
	}
	path := os.Getenv("PATH")
	key := path + "\x00" + strings.Join(roots, "\x00") + "\x00" + name
	if p, ok := lookCache.Load(key); ok {
		return p.(string), nil
	}
	for _, dir := range sandbox.PathDirs(path) {
		if inside(dir, roots) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			lookCache.Store(key, p)
			return p, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			continue
		}
	}
	return "", fmt.Errorf("%s: %w", name, ErrNotFound)
}

// inside reports whether dir is one of roots or below one of them, by
// path and, when the roots exist, by their resolved symlinks too.
func inside(dir string, roots []string) bool {
	for _, r := range roots {
		if r == "" {
			continue
		}
		cands := []string{filepath.Clean(r)}
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			cands = append(cands, rr)
		}
		dirs := []string{dir}
		if dd, err := filepath.EvalSymlinks(dir); err == nil {
			dirs = append(dirs, dd)
		}
		for _, c := range cands {
			for _, d := range dirs {
				if rel, err := filepath.Rel(c, d); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
					return true
				}
			}
		}
	}
	return false
}
