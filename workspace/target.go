package workspace

import (
	"path/filepath"
)

// Target is where p really is, with every symbolic link on the way
// resolved: slash-separated and relative to p's root when the target is
// under it, else the absolute OS path. A secret file reached through a link
// (docs/setup.txt -> ../.env) is decided by its target, not by the name the
// caller used. On a failure to resolve it is p.Rel().
func (p Path) Target() string {
	if p.r == nil {
		return p.rel
	}
	return RealTarget(p.r.dir, p.rel)
}

// RealTarget is Path.Target for the file rel (slash-separated) under the
// directory root, or for rel itself when rel is absolute.
func RealTarget(root, rel string) string {
	abs := filepath.FromSlash(rel)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	real, err := realPath(filepath.Clean(abs))
	if err != nil {
		return rel
	}
	realRoot, err := realPath(filepath.Clean(root))
	if err != nil {
		realRoot = root
	}
	if r, ok := within(realRoot, real); ok {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(real)
}
