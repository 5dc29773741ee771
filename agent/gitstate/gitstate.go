// Package gitstate reads what git knows about a workspace folder: the
// branch, the HEAD commit and the uncommitted files. A task records it when
// it starts and when it ends, so its report says on which commit it ran and
// which files the user had already modified.
//
// A repository's configuration names programs git runs (filters, hooks,
// fsmonitor, pagers, external diffs, through includes and commondir), and
// the workspace controls it. So this package never starts git itself: Read
// asks a Runner, which its user builds to run git confined (agentls: in the
// sandbox, with no writable folder, no network and an environment built
// from scratch by Env). Without a Runner, or when the Runner cannot confine
// git (ErrNoSandbox), Read runs no program at all: it reads the branch and
// HEAD from the files of the git dir and says that the uncommitted files
// were not read (State.NoStatus).
//
// Reading never fails: outside a repository or without a git binary the
// State says why there is no state (Reason); when git errs in a repository
// (one another user owns, say), the branch and HEAD come from the files and
// NoStatus carries git's error.
package gitstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"
)

// Timeout bounds one Read (every git command it runs). Each run starts a
// sandbox supervisor before git: on a loaded machine that takes far longer
// than git itself.
const Timeout = 15 * time.Second

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
	// Repo is true when the folder is in a git work tree and its state
	// could be read.
	Repo bool `json:"repo"`
	// Reason says why Repo is false: "not a git repository", "git is not
	// installed", or git's error.
	Reason string `json:"reason,omitempty"`
	// Branch is the current branch; "" when HEAD is detached.
	Branch string `json:"branch,omitempty"`
	// Head is the short hash of HEAD; "" in a repository without commits.
	Head string `json:"head,omitempty"`
	// Subject is the first line of HEAD's message ("" when it was read
	// without git).
	Subject string `json:"subject,omitempty"`
	// Prefix is the folder read, relative to the repository's top folder,
	// with a trailing "/"; "" at the top.
	Prefix string `json:"prefix,omitempty"`
	// Modified are the uncommitted files (staged, unstaged, untracked), in
	// git's order.
	Modified []Change `json:"modified,omitempty"`
	// Truncated is true when more than MaxModified files were uncommitted.
	Truncated bool `json:"truncated,omitempty"`
	// NoStatus says why Modified was not read (git could not be run
	// confined); "" when it was.
	NoStatus string `json:"noStatus,omitempty"`
}

// ReasonNoGit is the Reason of a State read without a git binary.
const ReasonNoGit = "git is not installed (no git on PATH)"

// ReasonNotRepo is the Reason of a folder outside any git work tree.
const ReasonNotRepo = "not a git repository"

// NoStatusNoSandbox is the NoStatus of a State read without running git,
// because git could not be confined.
const NoStatusNoSandbox = "not read: git runs only in the sandbox, and commands have none here"

// ErrNoGit is returned (wrapped) by a Runner that finds no git binary.
var ErrNoGit = errors.New("no git binary")

// ErrNoSandbox is returned (wrapped) by a Runner that cannot confine git:
// it did not start it.
var ErrNoSandbox = errors.New("git cannot be confined")

// Command is one run of git.
type Command struct {
	Args []string // the arguments after the git binary (Args)
	Dir  string   // the folder it runs in
	Env  []string // its whole environment (Env): nothing else may be added
}

// Output is what one run of git wrote and how it ended.
type Output struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Runner runs git as cmd says, confined so that any program a
// repository's configuration names can change nothing and reach nothing: no
// writable folder, no network, no secret in its environment. An error means
// git did not run (wrapping ErrNoGit or ErrNoSandbox when that is why); a
// non-zero exit is an Output, not an error.
type Runner func(ctx context.Context, cmd Command) (Output, error)

// configNeutral are the settings every run of git gets as `-c` options,
// in the command scope (above the repository's own): they turn off what
// runs a program or reaches the network. They are defense in depth: the
// Runner's confinement is what holds, since a filter or an include can
// name programs under keys no list can foresee. (Options, not
// GIT_CONFIG_KEY_n: a launcher that drops variables named like secrets
// would drop those.)
var configNeutral = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.sshCommand", "false"},
	{"core.askPass", "false"},
	{"core.quotepath", "false"},
	{"core.untrackedCache", "false"},
	{"diff.external", "false"},
	{"pager.status", "false"},
	{"pager.log", "false"},
	{"log.showSignature", "false"},
	{"gpg.program", "false"},
	{"protocol.allow", "never"},
	{"safe.bareRepository", "explicit"},
	{"submodule.recurse", "false"},
}

// Args are the arguments of one git run for the git subcommand args:
// configNeutral first.
func Args(args ...string) []string {
	out := make([]string, 0, 2*len(configNeutral)+len(args))
	for _, kv := range configNeutral {
		out = append(out, "-c", kv[0]+"="+kv[1])
	}
	return append(out, args...)
}

// Env is the environment of every git run: built from scratch (nothing of
// the server's, so no key), with no user or system configuration, no
// prompts and no optional locks (a status never takes the index lock a git
// of the user needs). ceiling is the user's GIT_CEILING_DIRECTORIES ("" for
// none): it only limits where git looks.
func Env(ceiling string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/nonexistent",
		"XDG_CONFIG_HOME=/nonexistent",
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_PAGER=cat",
		"PAGER=cat",
	}
	if ceiling != "" {
		env = append(env, "GIT_CEILING_DIRECTORIES="+ceiling)
	}
	return env
}

// Read reads the git state of dir through run. With a nil run, or one that
// cannot confine git, it runs nothing and reads the branch and HEAD from
// the git dir's files (ReadFiles). It never returns nil.
func Read(ctx context.Context, dir string, run Runner) *State {
	if run == nil {
		return ReadFiles(dir)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	g := git{run: run, dir: dir, env: Env(os.Getenv("GIT_CEILING_DIRECTORIES"))}

	out, err := g.output(ctx, "rev-parse", "--is-inside-work-tree", "--show-prefix")
	switch {
	case errors.Is(err, ErrNoSandbox):
		return ReadFiles(dir)
	case errors.Is(err, ErrNoGit):
		return &State{Reason: ReasonNoGit}
	case err != nil && strings.Contains(err.Error(), "not a git repository"):
		return &State{Reason: ReasonNotRepo}
	case err != nil:
		return fromFiles(dir, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 0 || lines[0] != "true" {
		return &State{Reason: ReasonNotRepo} // inside .git, or a bare repository
	}
	st := &State{Repo: true}
	if len(lines) > 1 {
		st.Prefix = lines[1]
	}
	// In a work tree, the other three reads are independent: they run at
	// once, so they take about as long as the slowest (each git starts a
	// sandbox of its own).
	type result struct {
		out []byte
		err error
	}
	reads := [][]string{
		// A detached HEAD makes symbolic-ref exit 1: Branch stays "".
		{"symbolic-ref", "--short", "-q", "HEAD"},
		// A repository without commits makes log fail: Head stays "".
		{"log", "-1", "--no-show-signature", "--no-ext-diff", "--no-textconv", "--format=%h%x00%s", "HEAD", "--"},
		{"status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignore-submodules=all"},
	}
	results := make([]result, len(reads))
	var wg sync.WaitGroup
	for i, args := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := g.output(ctx, args...)
			results[i] = result{out, err}
		}()
	}
	wg.Wait()
	if r := results[0]; r.err == nil {
		st.Branch = strings.TrimSpace(string(r.out))
	}
	if r := results[1]; r.err == nil {
		h, s, _ := strings.Cut(strings.TrimRight(string(r.out), "\n"), "\x00")
		st.Head, st.Subject = h, s
	}
	out, err = results[2].out, results[2].err
	if err != nil {
		return fromFiles(dir, err)
	}
	st.Modified, st.Truncated = parsePorcelain(out, MaxModified)
	return st
}

// fromFiles is the state of dir read from the files after git failed with
// err (it refuses a repository another user owns, say): the branch and
// HEAD, and why the uncommitted files are not listed. Where the files say
// no more than git, it is git's error.
func fromFiles(dir string, err error) *State {
	st := ReadFiles(dir)
	if !st.Repo {
		return &State{Reason: "git failed: " + err.Error()}
	}
	st.NoStatus = "not read: " + err.Error()
	return st
}

// git runs git commands of one Read.
type git struct {
	run Runner
	dir string
	env []string
}

// output runs git with args and returns its stdout; the error of a failed
// run carries git's stderr.
func (g git) output(ctx context.Context, args ...string) ([]byte, error) {
	out, err := g.run(ctx, Command{Args: Args(args...), Dir: g.dir, Env: g.env})
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	if out.ExitCode != 0 {
		return nil, fmt.Errorf("git %s: exit code %d: %s", args[0], out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	return out.Stdout, nil
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
	if s.Subject == "" {
		return fmt.Sprintf("%s at %s", where, s.Head)
	}
	return fmt.Sprintf("%s at %s (%s)", where, s.Head, s.Subject)
}
