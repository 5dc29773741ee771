// Package gitstate reads what git knows about a workspace folder: the
// branch, the HEAD commit and the uncommitted files. A task records it when
// it starts and when it ends, so its report says on which commit it ran and
// which files the user had already modified.
//
// Reading never fails: outside a repository, without a git binary on PATH,
// or when git errs, the State says why there is no state (Reason). git is
// run with a short timeout, GIT_OPTIONAL_LOCKS=0 (a status never takes the
// index lock a concurrent git of the user needs) and core.fsmonitor off (a
// repository's config must not make agentls run a program of its choice).
package gitstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"
)

// Timeout bounds one Read (every git command it runs).
const Timeout = 5 * time.Second

// MaxModified bounds the uncommitted files a State lists; Truncated says
// when there were more.
const MaxModified = 500

// Change is one uncommitted file, as `git status --porcelain=v1` lists it.
type Change struct {
	// Status is the two-letter XY code: " M" modified in the work tree,
	// "M " staged, "??" untracked, "R " renamed, ...
	Status string `json:"status"`
	// Path is relative to the repository's top folder, slash-separated. An
	// untracked folder ends with "/".
	Path string `json:"path"`
	// From is the old path of a rename or copy.
	From string `json:"from,omitempty"`
}

// State is what git says about a folder at one moment.
type State struct {
	// Repo is true when the folder is in a git work tree and git answered.
	Repo bool `json:"repo"`
	// Reason says why Repo is false: "not a git repository", "git is not
	// installed", or git's error.
	Reason string `json:"reason,omitempty"`
	// Branch is the current branch; "" when HEAD is detached.
	Branch string `json:"branch,omitempty"`
	// Head is the short hash of HEAD; "" in a repository without commits.
	Head string `json:"head,omitempty"`
	// Subject is the first line of HEAD's message.
	Subject string `json:"subject,omitempty"`
	// Prefix is the folder read, relative to the repository's top folder,
	// with a trailing "/"; "" at the top.
	Prefix string `json:"prefix,omitempty"`
	// Modified are the uncommitted files (staged, unstaged, untracked), in
	// git's order.
	Modified []Change `json:"modified,omitempty"`
	// Truncated is true when more than MaxModified files were uncommitted.
	Truncated bool `json:"truncated,omitempty"`
}

// ReasonNoGit is the Reason of a State read without a git binary.
const ReasonNoGit = "git is not installed (no git on PATH)"

// ReasonNotRepo is the Reason of a folder outside any git work tree.
const ReasonNotRepo = "not a git repository"

// Read reads the git state of dir. It never returns nil.
func Read(ctx context.Context, dir string) *State {
	bin, err := exec.LookPath("git")
	if err != nil {
		return &State{Reason: ReasonNoGit}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	g := runner{bin: bin, dir: dir}

	out, err := g.run(ctx, "rev-parse", "--is-inside-work-tree", "--show-prefix")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && strings.Contains(string(ee.Stderr), "not a git repository") {
			return &State{Reason: ReasonNotRepo}
		}
		return &State{Reason: "git failed: " + err.Error()}
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 0 || lines[0] != "true" {
		return &State{Reason: ReasonNotRepo} // inside .git, or a bare repository
	}
	st := &State{Repo: true}
	if len(lines) > 1 {
		st.Prefix = lines[1]
	}
	// A detached HEAD makes symbolic-ref exit 1: Branch stays "".
	if out, err := g.run(ctx, "symbolic-ref", "--short", "-q", "HEAD"); err == nil {
		st.Branch = strings.TrimSpace(string(out))
	}
	// A repository without commits makes log fail: Head stays "".
	if out, err := g.run(ctx, "log", "-1", "--no-show-signature", "--format=%h%x00%s", "HEAD", "--"); err == nil {
		h, s, _ := strings.Cut(strings.TrimRight(string(out), "\n"), "\x00")
		st.Head, st.Subject = h, s
	}
	out, err = g.run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignore-submodules=dirty")
	if err != nil {
		return &State{Reason: "git status failed: " + err.Error()}
	}
	st.Modified, st.Truncated = parsePorcelain(out, MaxModified)
	return st
}

// parsePorcelain parses `git status --porcelain=v1 -z`: entries "XY PATH\0",
// a rename or copy followed by "ORIG\0". It keeps at most max entries.
func parsePorcelain(out []byte, max int) ([]Change, bool) {
	var cs []Change
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := string(fields[i])
		if len(f) < 4 || f[2] != ' ' {
			continue // the empty tail after the last NUL
		}
		c := Change{Status: f[:2], Path: f[3:]}
		if c.Status[0] == 'R' || c.Status[0] == 'C' || c.Status[1] == 'R' || c.Status[1] == 'C' {
			if i+1 < len(fields) {
				c.From = string(fields[i+1])
				i++
			}
		}
		if len(cs) == max {
			return cs, true
		}
		cs = append(cs, c)
	}
	return cs, false
}

// Dirty returns the uncommitted change of the file at rel (slash-separated,
// relative to the folder that was read), if it had one: the file itself, or
// an untracked folder that holds it.
func (s *State) Dirty(rel string) (Change, bool) {
	if s == nil || !s.Repo {
		return Change{}, false
	}
	p := path.Clean(s.Prefix + rel)
	for _, c := range s.Modified {
		if c.Path == p || (strings.HasSuffix(c.Path, "/") && strings.HasPrefix(p, c.Path)) {
			return c, true
		}
	}
	return Change{}, false
}

// Rel is c's path relative to the folder that was read (s.Prefix cut off);
// a file outside that folder keeps its repository path.
func (s *State) Rel(c Change) string {
	if r, ok := strings.CutPrefix(c.Path, s.Prefix); ok {
		return r
	}
	return c.Path
}

// Describe is one line about s: "main at 1a2b3c4 (subject)", or why there is
// no state.
func (s *State) Describe() string {
	if s == nil {
		return "git state unknown"
	}
	if !s.Repo {
		return s.Reason
	}
	where := s.Branch
	if where == "" {
		where = "detached HEAD"
	}
	if s.Head == "" {
		return where + ", no commit yet"
	}
	return fmt.Sprintf("%s at %s (%s)", where, s.Head, s.Subject)
}

type runner struct {
	bin, dir string
}

// run runs git with args in r.dir and returns its stdout; the error of a
// failed run carries git's stderr (exec.ExitError.Stderr).
func (r runner) run(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"-c", "core.fsmonitor=false", "-c", "core.quotepath=false"}, args...)
	cmd := exec.CommandContext(ctx, r.bin, full...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	return out, nil
}
