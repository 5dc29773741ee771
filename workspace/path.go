package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Resolve is THE path rule: it turns any path the model or the user
// gives into a Path inside one of the workspace roots, or a clear error.
//
// Accepted forms: relative ("a/b.go", "./a/b.go", "a//b/../b.go"), absolute
// inside a root, file:// URIs (percent-encoded, Windows drive letters),
// "~/..." (the user's home, which must still be inside a root), a path that
// repeats the root's own folder name ("dist/story.md" when the root is
// ".../dist": the file that exists wins, never "dist/dist/story.md"), and
// backslash separators (a backslash is always a separator, so a file whose
// name contains one cannot be named). A relative path whose first element is
// the name of a root after the first is taken inside that root, matching
// Path.String.
//
// It refuses, with an error wrapping ErrOutside, anything outside every root:
// through "..", through symlinks (including dangling ones) whose target is
// outside, and through /proc-style aliases such as /proc/self/root or
// /proc/self/cwd. Empty input, a NUL byte or an unparsable URI wrap
// ErrInvalidPath. The file need not exist (so new files can be named).
func (w *Workspace) Resolve(input string) (Path, error) {
	return resolve(w.rootList(), input)
}

// resolve implements Resolve over a fixed list of roots (first = primary).
func resolve(roots []*root, input string) (Path, error) {
	if len(roots) == 0 {
		return Path{}, fmt.Errorf("resolve %q: the workspace has no root folder: %w", input, ErrOutside)
	}
	s, err := normalizeInput(input, goos)
	if err != nil {
		return Path{}, err
	}
	if isAbsSlash(s, goos) {
		return resolveAbs(roots, input, s)
	}
	return resolveRel(roots, input, s)
}

// normalizeInput turns input into a slash-separated path (absolute or
// relative) with URIs decoded and "~" expanded.
func normalizeInput(input, goos string) (string, error) {
	s := strings.TrimSpace(input)
	if s == "" {
		return "", fmt.Errorf("empty path: %w", ErrInvalidPath)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte: %w", input, ErrInvalidPath)
	}
	if len(s) >= 5 && strings.EqualFold(s[:5], "file:") {
		p, err := uriToPath(s, goos)
		if err != nil {
			return "", err
		}
		s = p
	}
	s = strings.ReplaceAll(s, `\`, "/")
	if s == "~" || strings.HasPrefix(s, "~/") {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return "", fmt.Errorf("path %q: no home directory to expand ~: %w", input, ErrOutside)
		}
		s = filepath.ToSlash(home) + s[1:]
	} else if first, _, _ := strings.Cut(s, "/"); strings.HasPrefix(first, "~") && isUserName(first[1:]) {
		return "", fmt.Errorf("path %q names another user's home directory: %w", input, ErrOutside)
	}
	if goos == "windows" && len(s) >= 2 && s[1] == ':' && isLetter(s[0]) && (len(s) == 2 || s[2] != '/') {
		return "", fmt.Errorf("path %q is relative to a drive's current directory; give a full path: %w", input, ErrInvalidPath)
	}
	return s, nil
}

// isUserName reports whether s looks like "~name" would in a shell: a login
// name. Folders really named "~something" are rare; a model writing
// "~bob/x" means bob's home.
func isUserName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// hasDrive reports a Windows drive-letter path "C:/...".
func hasDrive(s string) bool {
	return len(s) >= 3 && isLetter(s[0]) && s[1] == ':' && s[2] == '/' || len(s) == 2 && isLetter(s[0]) && s[1] == ':'
}

// isAbsSlash reports whether the slash-separated s is absolute. A drive
// letter makes a path absolute on every platform: on Unix it can only be
// outside the roots, never a folder named "C:".
func isAbsSlash(s, goos string) bool {
	return strings.HasPrefix(s, "/") || hasDrive(s)
}

// uriToPath decodes a file URI into a slash-separated path the way goos
// spells it: "file:///C:/a%20b" is "C:/a b" on Windows and "/C:/a b"
// elsewhere (where it can only be outside the roots); "file://host/share/x"
// is the UNC path "//host/share/x" on Windows and refused elsewhere.
func uriToPath(uri, goos string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("bad file URI %q: %v: %w", uri, err, ErrInvalidPath)
	}
	if !strings.EqualFold(u.Scheme, "file") {
		return "", fmt.Errorf("URI %q is not a file URI: %w", uri, ErrInvalidPath)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		// '#' and '?' in a file name must be percent-encoded in a URI; seeing
		// them raw means the URI was not encoded, so keep them as text.
		u.Path += uri[strings.IndexAny(uri, "?#"):]
		u.RawQuery, u.Fragment = "", ""
	}
	p := u.Path
	if u.Opaque != "" { // "file:a/b": no authority, relative
		p, err = url.PathUnescape(u.Opaque)
		if err != nil {
			return "", fmt.Errorf("bad file URI %q: %v: %w", uri, err, ErrInvalidPath)
		}
	}
	host := u.Host
	if host != "" && !strings.EqualFold(host, "localhost") {
		if goos != "windows" {
			return "", fmt.Errorf("file URI %q names another host (%s): %w", uri, host, ErrOutside)
		}
		return "//" + host + p, nil
	}
	if goos == "windows" && len(p) >= 3 && p[0] == '/' && hasDrive(p[1:]) {
		p = strings.ToUpper(p[1:2]) + p[2:]
	}
	if p == "" {
		return "", fmt.Errorf("file URI %q has no path: %w", uri, ErrInvalidPath)
	}
	return p, nil
}

// candidate is one reading of a relative input: rel inside r.
type candidate struct {
	r   *root
	rel string // slash-separated, clean, may start with ".." before containment is checked
}

// relCandidates are the places the relative slash path s may name: a
// root after the first named by its prefix (the form Path.String prints),
// the primary root, and the primary root when s repeats its own folder
// name ("dist/story.md" in root ".../dist").
func relCandidates(roots []*root, s string) []candidate {
	clean := path.Clean(s)
	first, rest, _ := strings.Cut(clean, "/")
	if rest == "" {
		rest = "."
	}
	var cands []candidate
	for _, r := range roots[1:] {
		if first == r.name {
			cands = append(cands, candidate{r, rest})
		}
	}
	primary := roots[0]
	cands = append(cands, candidate{primary, clean})
	if first != "." && first != ".." && first == filepath.Base(primary.dir) {
		cands = append(cands, candidate{primary, rest})
	}
	return cands
}

func resolveRel(roots []*root, input, s string) (Path, error) {
	cands := relCandidates(roots, s)
	best := -1
	bestScore := -1
	var firstErr error
	for i, c := range cands {
		abs := filepath.Join(c.r.dir, filepath.FromSlash(c.rel))
		score := 0
		if _, err := os.Lstat(abs); err == nil {
			score = 2
		} else if fi, err := os.Stat(filepath.Dir(abs)); err == nil && fi.IsDir() {
			score = 1
		}
		if score <= bestScore {
			continue
		}
		if _, err := checkAbs(roots, input, abs); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		best, bestScore = i, score
	}
	if best < 0 {
		return Path{}, firstErr
	}
	c := cands[best]
	return checkAbs(roots, input, filepath.Join(c.r.dir, filepath.FromSlash(c.rel)))
}

func resolveAbs(roots []*root, input, s string) (Path, error) {
	abs := filepath.Clean(filepath.FromSlash(s))
	if goos == "windows" && strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		abs = filepath.Join(filepath.VolumeName(roots[0].dir), abs)
	}
	if _, _, ok := lexicalRoot(roots, abs); !ok {
		if viaProc(abs) {
			return Path{}, fmt.Errorf("%q goes through %s, which aliases other files; name the file inside the workspace instead: %w", input, procDir(abs), ErrOutside)
		}
		// Maybe the input spells a root through a symlink (macOS /var ->
		// /private/var): compare real paths.
		real, err := realPath(abs)
		if err == nil {
			for _, r := range roots {
				if rel, ok := within(r.real, real); ok {
					return checkAbs(roots, input, filepath.Join(r.dir, rel))
				}
			}
		}
		return Path{}, fmt.Errorf("%q is outside the workspace roots (%s): %w", input, rootNames(roots), ErrOutside)
	}
	return checkAbs(roots, input, abs)
}

// viaProc reports a path through the kernel's aliases for other files
// (/proc/<pid>/root, /proc/self/cwd, /dev/fd/N): they never count as being
// inside a root, whatever they point to.
func viaProc(abs string) bool {
	return strings.HasPrefix(abs, "/proc/") || strings.HasPrefix(abs, "/dev/fd/") || abs == "/proc" ||
		strings.HasPrefix(abs, "/dev/std")
}

func procDir(abs string) string {
	if strings.HasPrefix(abs, "/proc") {
		return "/proc"
	}
	return "/dev"
}

// checkAbs makes a Path for the clean absolute abs after checking that it,
// and what it really points to after symlinks, lie inside the roots.
func checkAbs(roots []*root, input, abs string) (Path, error) {
	r, rel, ok := lexicalRoot(roots, abs)
	if !ok {
		return Path{}, fmt.Errorf("%q resolves to %s, outside the workspace roots (%s): %w", input, abs, rootNames(roots), ErrOutside)
	}
	real, err := realPath(abs)
	if err != nil {
		return Path{}, fmt.Errorf("%q: %w", input, err)
	}
	inside := false
	for _, r := range roots {
		if _, ok := within(r.real, real); ok {
			inside = true
			break
		}
	}
	if !inside {
		return Path{}, fmt.Errorf("%q is a link that leads outside the workspace (roots: %s): %w", input, rootNames(roots), ErrOutside)
	}
	return r.path(filepath.ToSlash(rel)), nil
}

// lexicalRoot finds the deepest root that contains the clean absolute abs.
func lexicalRoot(roots []*root, abs string) (*root, string, bool) {
	var best *root
	var bestRel string
	for _, r := range roots {
		if rel, ok := within(r.dir, abs); ok && (best == nil || len(r.dir) > len(best.dir)) {
			best, bestRel = r, rel
		}
	}
	return best, bestRel, best != nil
}

// within reports whether the clean absolute p is dir or below it, and the
// OS-separated relative path ("." for dir itself).
func within(dir, p string) (string, bool) {
	if sameFile(p, dir) {
		return ".", true
	}
	prefix := dir
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if len(p) > len(prefix) && sameFile(p[:len(prefix)], prefix) {
		return p[len(prefix):], true
	}
	return "", false
}

func sameFile(a, b string) bool {
	if goos == "windows" || goos == "darwin" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

func rootNames(roots []*root) string {
	names := make([]string, len(roots))
	for i, r := range roots {
		names[i] = r.dir
	}
	return strings.Join(names, ", ")
}

// realPath resolves every symlink in the clean absolute p, like
// filepath.EvalSymlinks, except that a missing tail is kept as written and a
// dangling symlink is followed to where its target would be: writing
// through it would land there.
func realPath(p string) (string, error) {
	if linkFree(p) {
		return p, nil
	}
	vol := filepath.VolumeName(p)
	sep := string(filepath.Separator)
	comps := splitComps(p[len(vol):])
	cur := vol + sep
	hops := 0
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		if c == "." {
			continue
		}
		if c == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return filepath.Join(append([]string{next}, comps[i+1:]...)...), nil
			}
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		if hops > 40 {
			return "", fmt.Errorf("resolve %s: too many levels of symbolic links: %w", p, ErrInvalidPath)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			cur = v + sep
			target = target[len(v):]
		}
		comps = append(splitComps(target), comps[i+1:]...)
		i = -1
	}
	return cur, nil
}

func splitComps(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator })
}
