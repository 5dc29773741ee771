package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent/gitstate"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// taskGit is the git state of a task's workspace (its first root): read
// before the task starts and after it ends, and the files the task edited
// that already had uncommitted changes of the user's.
type taskGit struct {
	root string          // the folder read: the workspace's first root
	run  gitstate.Runner // runs git confined

	// ready is closed once before is read; before is never changed after.
	// The read runs beside the task's first model call: every tool of the
	// task waits for it (gitReadyTool), so nothing the task does can reach
	// the state read "before" it.
	ready  chan struct{}
	before *gitstate.State

	mu     sync.Mutex // guards after and warned
	after  *gitstate.State
	warned []string // workspace paths, in the order first edited
}

// newTaskGit starts reading the git state of root before a task; the read
// ends within gitstate.Timeout whatever happens to ctx.
func newTaskGit(ctx context.Context, root string, run gitstate.Runner) *taskGit {
	g := &taskGit{root: root, run: run, ready: make(chan struct{})}
	go func() {
		defer close(g.ready)
		g.before = gitstate.Read(context.WithoutCancel(ctx), root, run)
	}()
	return g
}

// readBefore waits for the state before the task and returns it.
func (g *taskGit) readBefore() *gitstate.State {
	<-g.ready
	return g.before
}

// gitReadyTool runs a tool of the task only once the git state before the
// task was read.
type gitReadyTool struct {
	tools.Tool
	git *taskGit
}

func (t gitReadyTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	select {
	case <-t.git.ready:
	case <-ctx.Done():
		return tools.Result{}, ctx.Err()
	}
	return t.Tool.Run(ctx, args)
}

// noStatusCancelled is the NoStatus of the state after a cancelled task.
const noStatusCancelled = "not read: the task was cancelled (a cancel ends the task at once)"

// end reads the state after the task. After a cancel, branch and HEAD
// come from the files and git is not started: the user asked for the task
// to stop now, and git status in its sandbox takes a while.
func (g *taskGit) end(ctx context.Context, cancelled bool) {
	var st *gitstate.State
	if cancelled {
		st = gitstate.ReadFiles(g.root)
		if st.Repo {
			st.NoStatus = noStatusCancelled
		}
	} else {
		st = gitstate.Read(ctx, g.root, g.run)
	}
	g.mu.Lock()
	g.after = st
	g.mu.Unlock()
}

// gitBinary is the git binary a host runs: resolved once, from the
// absolute PATH directories outside the workspace (tools.LookPath), so a
// git a command plants later (in the workspace, or on PATH) is never run.
type gitBinary struct {
	once sync.Once
	path string
	err  error
}

// gitRunner runs git for the git state of tasks: through the launcher
// (tools.Run), in the sandbox with no writable folder and no network, with
// the environment gitstate builds from scratch (no key). A repository's
// config and attributes can name any program (filters, fsmonitor, hooks,
// pagers, external diffs, includes, commondir); whatever it names runs
// there and can change nothing. Where the sandbox is off or unavailable,
// git is not started at all (tools.ErrNotConfined) and gitstate reads the
// branch and HEAD from the files instead.
func (h *Host) gitRunner(sandboxMode string, roots []string) gitstate.Runner {
	h.git.once.Do(func() { h.git.path, h.git.err = tools.LookPath("git", roots) })
	bin, lookErr := h.git.path, h.git.err
	return func(ctx context.Context, c gitstate.Command) (gitstate.Output, error) {
		if bin == "" {
			return gitstate.Output{}, fmt.Errorf("%w: %v", gitstate.ErrNoGit, lookErr)
		}
		stdout, stderr := &cappedBuffer{max: maxGitOutput}, &cappedBuffer{max: 64 << 10}
		res, err := tools.Run(ctx, tools.RunSpec{
			Argv: append([]string{bin}, c.Args...), Dir: c.Dir, Env: c.Env,
			Stdout: stdout, Stderr: stderr, Timeout: gitstate.Timeout,
			Sandbox: tools.SandboxOptions{Mode: sandboxMode, Roots: roots, ReadOnly: true},
		})
		switch {
		case errors.Is(err, tools.ErrNotConfined):
			return gitstate.Output{}, fmt.Errorf("%w: %v", gitstate.ErrNoSandbox, err)
		case err != nil:
			return gitstate.Output{}, err
		case res.TimedOut || res.Cancelled:
			return gitstate.Output{}, fmt.Errorf("git %s: stopped (timed out or cancelled)", firstArg(c.Args))
		case stdout.cut:
			return gitstate.Output{}, fmt.Errorf("git %s: more than %d bytes of output", firstArg(c.Args), maxGitOutput)
		}
		return gitstate.Output{Stdout: stdout.b.Bytes(), Stderr: stderr.b.Bytes(), ExitCode: res.ExitCode}, nil
	}
}

// maxGitOutput bounds what one git run may print (a status of 500 files
// needs far less).
const maxGitOutput = 8 << 20

// firstArg is the git subcommand of args (after the -c options).
func firstArg(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		return args[i]
	}
	return ""
}

// cappedBuffer keeps the first max bytes written to it; cut says more came.
// It is written by one goroutine (tools.Run copies each stream on its own).
type cappedBuffer struct {
	b   bytes.Buffer
	max int
	cut bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); len(p) > room {
		c.b.Write(p[:max(room, 0)])
		c.cut = true
		return len(p), nil
	}
	return c.b.Write(p)
}

// GitState is the git state of a task's workspace, as the result of a task
// carries it (Outcome.Git).
type GitState struct {
	// Before is read before the task started, After once it ended (nil
	// while it runs).
	Before *gitstate.State `json:"before"`
	After  *gitstate.State `json:"after,omitempty"`
	// Overlaps are the files the task edited that had uncommitted changes of
	// the user's before it started.
	Overlaps []string `json:"overlaps,omitempty"`
}

func (g *taskGit) state() *GitState {
	if g == nil {
		return nil
	}
	before := g.readBefore()
	g.mu.Lock()
	defer g.mu.Unlock()
	return &GitState{Before: before, After: g.after, Overlaps: append([]string(nil), g.warned...)}
}

// firstOverlap reports whether path (of the first root) had uncommitted
// changes before the task and is edited for the first time now, with the
// warning to show.
func (g *taskGit) firstOverlap(p workspace.Path) (string, bool) {
	if p.Root() != g.root {
		return "", false
	}
	c, ok := g.readBefore().Dirty(p.Rel())
	if !ok {
		return "", false
	}
	name := p.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.warned {
		if w == name {
			return "", false
		}
	}
	g.warned = append(g.warned, name)
	if c.Status == "??" {
		return fmt.Sprintf("%s is untracked (not in git): the task is about to edit it, and the user's work in it has no copy in git.", name), true
	}
	return fmt.Sprintf("%s has uncommitted changes of the user's (git status %q): the task is about to edit it on top of them.", name, strings.TrimSpace(c.Status)), true
}

// gitWarnEditor warns, before an edit is applied, when it touches a file
// that had uncommitted changes before the task started: once per file.
type gitWarnEditor struct {
	next workspace.Editor
	git  *taskGit
	warn func(string)
}

func (e gitWarnEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	for _, fe := range edits {
		if msg, ok := e.git.firstOverlap(fe.Path); ok {
			e.warn(msg)
		}
	}
	return e.next.Apply(ctx, label, edits)
}

// GitSection is the report's "Git" section: the branch and HEAD before and
// after the task, the files already uncommitted before it, and those of
// them the task edited.
func GitSection(s *GitState) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Git\n\n")
	if s.Before == nil || !s.Before.Repo {
		reason := "git state unknown"
		if s.Before != nil {
			reason = "git state unknown: " + s.Before.Reason
		}
		fmt.Fprintf(&b, "%s\n", reason)
		return b.String()
	}
	fmt.Fprintf(&b, "- before: %s\n", s.Before.Describe())
	if s.After != nil {
		fmt.Fprintf(&b, "- after: %s\n", s.After.Describe())
	}
	if s.Before.NoStatus != "" {
		fmt.Fprintf(&b, "- uncommitted before the task: %s\n", s.Before.NoStatus)
	} else if len(s.Before.Modified) == 0 {
		b.WriteString("- uncommitted before the task: none\n")
	} else {
		b.WriteString("- uncommitted before the task:\n")
		for _, c := range s.Before.Modified {
			line := fmt.Sprintf("  - `%s` %s", strings.ReplaceAll(c.Status, " ", "·"), render.Cell(c.Path))
			if c.From != "" {
				line += " (from " + render.Cell(c.From) + ")"
			}
			b.WriteString(line + "\n")
		}
		if s.Before.Truncated {
			fmt.Fprintf(&b, "  - and more (only the first %d are listed)\n", gitstate.MaxModified)
		}
	}
	if len(s.Overlaps) > 0 {
		fmt.Fprintf(&b, "- edited by the task on top of the user's uncommitted changes: %s\n", strings.Join(s.Overlaps, ", "))
	}
	return b.String()
}
