package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LookPath finds the program name the way a shell would, in the
// directories of PATH, but only in those a command cannot have planted it
// in: it skips relative entries ("", ".", "bin") and directories inside a
// workspace root (roots). It returns an absolute path; callers resolve once
// and keep it, so a program planted later on PATH is never picked up.
func LookPath(name string, roots []string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/') {
		return "", fmt.Errorf("lookpath %q: a name, not a path", name)
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) || insideAny(filepath.Clean(dir), roots) {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("lookpath %q: %w", name, errNotOnPath)
}

var errNotOnPath = errors.New("not found in the absolute PATH directories outside the workspace")

func insideAny(dir string, roots []string) bool {
	for _, r := range roots {
		r = filepath.Clean(r)
		if dir == r || strings.HasPrefix(dir, r+string(filepath.Separator)) {
			return true
		}
		if real, err := filepath.EvalSymlinks(r); err == nil && (dir == real || strings.HasPrefix(dir, real+string(filepath.Separator))) {
			return true
		}
	}
	return false
}
