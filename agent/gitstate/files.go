package gitstate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ReadFiles reads the branch and HEAD of the work tree holding dir from
// the files of its git dir (.git, or where a `.git` file's "gitdir:" line
// points; refs from its commondir, loose or packed), running no program:
// what agentls does when git cannot be confined. It cannot list the
// uncommitted files without running git's filters (State.NoStatus says
// so), and leaves Subject empty (the commit may be packed).
//
// It reads only small regular files and opens none that could block (a
// FIFO planted as HEAD): a command may have written any of them.
func ReadFiles(dir string) *State {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return &State{Reason: "git state: " + err.Error()}
	}
	top, gitDir, err := findGitDir(dir, ceilings(os.Getenv("GIT_CEILING_DIRECTORIES")))
	if err != nil {
		return &State{Reason: err.Error()}
	}
	st := &State{Repo: true, NoStatus: NoStatusNoSandbox}
	if rel, err := filepath.Rel(top, dir); err == nil && rel != "." {
		st.Prefix = filepath.ToSlash(rel) + "/"
	}
	common := gitDir
	if b, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	head, err := readSmall(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return &State{Reason: ReasonNotRepo}
	}
	ref := strings.TrimSpace(string(head))
	hash := ""
	for range 5 { // symbolic refs pointing at symbolic refs, up to a bound
		name, ok := strings.CutPrefix(ref, "ref:")
		if !ok {
			hash = ref
			break
		}
		name = strings.TrimSpace(name)
		if !validRef(name) {
			return &State{Reason: fmt.Sprintf("git state: HEAD names %q, not a ref", name)}
		}
		if st.Branch == "" && hash == "" {
			st.Branch = strings.TrimPrefix(name, "refs/heads/")
		}
		if ref = lookupRef(gitDir, common, name); ref == "" {
			break // a branch without commits
		}
	}
	if isHash(hash) {
		st.Head = hash[:7]
	} else if hash != "" {
		return &State{Reason: "git state: HEAD is not a commit hash"}
	}
	return st
}

// findGitDir walks up from dir to the work tree top holding a `.git`
// (folder, or file with a "gitdir:" line), never into a ceiling.
func findGitDir(dir string, ceil map[string]bool) (top, gitDir string, err error) {
	for _, c := range strings.Split(filepath.ToSlash(dir), "/") {
		if strings.EqualFold(c, ".git") {
			return "", "", errors.New(ReasonNotRepo) // inside a git dir: no work tree
		}
	}
	for cur := dir; ; {
		p := filepath.Join(cur, ".git")
		if fi, err := os.Lstat(p); err == nil {
			switch {
			case fi.IsDir():
				return cur, p, nil
			case fi.Mode().IsRegular():
				b, err := readSmall(p)
				if err != nil {
					return "", "", fmt.Errorf("git state: %w", err)
				}
				target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
				if !ok {
					return "", "", fmt.Errorf("git state: %s has no gitdir line", p)
				}
				target = strings.TrimSpace(target)
				if !filepath.IsAbs(target) {
					target = filepath.Join(cur, target)
				}
				return cur, filepath.Clean(target), nil
			}
		}
		parent := filepath.Dir(cur)
		if parent == cur || ceil[parent] {
			return "", "", errors.New(ReasonNotRepo)
		}
		cur = parent
	}
}

func ceilings(v string) map[string]bool {
	m := map[string]bool{}
	for _, d := range filepath.SplitList(v) {
		if filepath.IsAbs(d) {
			m[filepath.Clean(d)] = true
		}
	}
	return m
}

// lookupRef is what ref name holds ("ref: ..." or a hash): its loose file
// (per work tree first, then the common dir), else its line in
// packed-refs; "" when it does not exist.
func lookupRef(gitDir, common, name string) string {
	for _, d := range []string{gitDir, common} {
		if b, err := readSmall(filepath.Join(d, filepath.FromSlash(name))); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	f, err := openRegular(filepath.Join(common, "packed-refs"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		h, n, ok := strings.Cut(sc.Text(), " ")
		if ok && n == name && isHash(h) {
			return h
		}
	}
	return ""
}

// validRef: a ref name under refs/ with no component that leaves it.
func validRef(name string) bool {
	if !strings.HasPrefix(name, "refs/") && name != "HEAD" {
		return false
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// maxSmall bounds the files of a git dir read whole (HEAD, a ref, a
// commondir or gitdir line).
const maxSmall = 4096

// openRegular opens p for reading without blocking on a FIFO or device,
// and only if it is a regular file.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return f, nil
}

func readSmall(p string) ([]byte, error) {
	f, err := openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSmall))
}
