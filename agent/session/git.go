package session

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent/gitstate"
	"github.com/agentls/agentls/workspace"
)

// taskGit is the git state of a task's workspace (its first root): read
// before the task starts and after it ends, and the files the task edited
// that already had uncommitted changes of the user's.
type taskGit struct {
	root   string          // the folder read: the workspace's first root
	before *gitstate.State // set before the task starts, never changed

	mu     sync.Mutex // guards after and warned
	after  *gitstate.State
	warned []string // workspace paths, in the order first edited
}

func newTaskGit(ctx context.Context, root string) *taskGit {
	return &taskGit{root: root, before: gitstate.Read(ctx, root)}
}

// end reads the state after the task.
func (g *taskGit) end(ctx context.Context) {
	st := gitstate.Read(ctx, g.root)
	g.mu.Lock()
	g.after = st
	g.mu.Unlock()
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
	g.mu.Lock()
	defer g.mu.Unlock()
	return &GitState{Before: g.before, After: g.after, Overlaps: append([]string(nil), g.warned...)}
}

// firstOverlap reports whether path (of the first root) had uncommitted
// changes before the task and is edited for the first time now, with the
// warning to show.
func (g *taskGit) firstOverlap(p workspace.Path) (string, bool) {
	if p.Root() != g.root {
		return "", false
	}
	c, ok := g.before.Dirty(p.Rel())
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
	if len(s.Before.Modified) == 0 {
		b.WriteString("- uncommitted before the task: none\n")
	} else {
		b.WriteString("- uncommitted before the task:\n")
		for _, c := range s.Before.Modified {
			line := fmt.Sprintf("  - `%s` %s", strings.ReplaceAll(c.Status, " ", "·"), mdCell(c.Path))
			if c.From != "" {
				line += " (from " + mdCell(c.From) + ")"
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
