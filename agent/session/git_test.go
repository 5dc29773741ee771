package session_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/gitstate"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// recPort records a task's events; edits go to disk and every question is
// allowed once.
type recPort struct {
	session.Unsupported
	mu     sync.Mutex
	events []agent.Event
}

func (p *recPort) Event(e agent.Event) {
	p.mu.Lock()
	p.events = append(p.events, e)
	p.mu.Unlock()
}

func (p *recPort) Editor(*workspace.Workspace) workspace.Editor { return nil }

func (p *recPort) AskUser(context.Context, permission.Request) (tools.Decision, error) {
	return tools.AllowOnce, nil
}

// notes returns the notes shown in progress, in order.
func (p *recPort) notes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		if e.Kind == agent.EventNote {
			out = append(out, e.Text)
		}
	}
	return out
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeFile(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runEditTask runs, in root, an edit task whose model reads a.txt and
// b.txt, writes both, writes a.txt again and answers.
func runEditTask(t *testing.T, root string) (*session.Outcome, *recPort, string) {
	t.Helper()
	return runEditTaskWith(t, root, nil)
}

// runEditTaskWith is runEditTask with settings changed by set (nil: the
// defaults).
func runEditTaskWith(t *testing.T, root string, set func(*session.Settings)) (*session.Outcome, *recPort, string) {
	t.Helper()
	script := fakemodel.Script{Turns: []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Arguments: `{"path": "a.txt"}`}, {Name: "read_file", Arguments: `{"path": "b.txt"}`}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "write_file", Arguments: `{"path": "a.txt", "content": "a by the agent\n"}`}, {Name: "write_file", Arguments: `{"path": "b.txt", "content": "b by the agent\n"}`}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "write_file", Arguments: `{"path": "a.txt", "content": "a by the agent, again\n"}`}}},
		{Text: "Rewrote a.txt and b.txt."},
	}}
	srv, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := session.Defaults()
	s.BaseURL, s.Model, s.Validate, s.Recordings = srv.URL(), "fake-model", "off", false
	if set != nil {
		set(&s)
	}
	h := session.New(s, session.Options{DBPath: filepath.Join(t.TempDir(), "agentls.db"), Getenv: func(string) string { return "" }})
	defer h.Close()
	h.SetRoots([]string{root})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port := &recPort{}
	out, err := h.Run(ctx, agent.TaskSpec{Kind: agent.KindEdit, Prompt: "Rewrite a.txt and b.txt."}, port)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Status != agent.StateCompleted {
		t.Fatalf("task %s (%s): %s; notes %q", out.Result.Status, out.Result.StopReason, out.Result.Error, out.Result.Notes)
	}
	report, err := os.ReadFile(out.Report)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	return out, port, string(report)
}

// TestReportShowsGitStateAndWarnsBeforeEditingUserChanges: in a repository
// with a commit and a file the user modified, the report and the outcome
// give the branch, HEAD and the modified file; progress warns once, before
// the task's first write of that file, and not for a clean file.
func TestReportShowsGitStateAndWarnsBeforeEditingUserChanges(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required by this test (scripts/setup installs it): %v", err)
	}
	root := t.TempDir()
	writeFile(t, root, "a.txt", "a\n")
	writeFile(t, root, "b.txt", "b\n")
	writeFile(t, root, ".gitignore", ".agentls/\n")
	writeFile(t, root, "AGENTS.md", "Keep a.txt short.\n")
	writeFile(t, root, ".github/copilot-instructions.md", "Write plain text.\n")
	gitIn(t, root, "init", "-q", "-b", "feature/x")
	gitIn(t, root, "add", ".")
	gitIn(t, root, "-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "Add a and b")
	writeFile(t, root, "a.txt", "a, edited by the user\n")

	out, port, report := runEditTask(t, root)

	g := out.Git
	if g == nil || g.Before == nil || !g.Before.Repo || g.Before.Branch != "feature/x" || g.Before.Subject != "Add a and b" || g.Before.Head == "" {
		t.Fatalf("Outcome.Git = %+v (before %+v); want the branch and HEAD before", g, g.Before)
	}
	if len(g.Before.Modified) != 1 || g.Before.Modified[0] != (gitstate.Change{Status: " M", Path: "a.txt"}) {
		t.Errorf("modified before = %+v; want only a.txt", g.Before.Modified)
	}
	if g.After == nil || len(g.After.Modified) != 2 {
		t.Errorf("after = %+v; want a.txt and b.txt modified", g.After)
	}
	if strings.Join(g.Overlaps, ",") != "a.txt" {
		t.Errorf("overlaps = %v; want [a.txt]", g.Overlaps)
	}
	for _, s := range []string{"instructions used: AGENTS.md, .github/copilot-instructions.md\n", "## Git", "- before: feature/x at " + g.Before.Head + " (Add a and b)", "`·M` a.txt",
		"edited by the task on top of the user's uncommitted changes: a.txt"} {
		if !strings.Contains(report, s) {
			t.Errorf("report lacks %q:\n%s", s, report)
		}
	}
	var warnings []string
	for _, n := range port.notes() {
		if strings.Contains(n, "uncommitted changes of the user's") {
			warnings = append(warnings, n)
		}
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "a.txt ") {
		t.Errorf("warnings = %q; want one, about a.txt", warnings)
	}
	// The warning comes before the write of a.txt finishes.
	port.mu.Lock()
	warnAt, writeAt := -1, -1
	for i, e := range port.events {
		if e.Kind == agent.EventNote && strings.HasPrefix(e.Text, "a.txt ") && warnAt < 0 {
			warnAt = i
		}
		if e.Kind == agent.EventToolFinished && e.Tool == "write_file" && strings.Contains(e.Args, "a.txt") && writeAt < 0 {
			writeAt = i
		}
	}
	port.mu.Unlock()
	if warnAt < 0 || writeAt < 0 || warnAt > writeAt {
		t.Errorf("warning at event %d, first write of a.txt finished at %d; want the warning first", warnAt, writeAt)
	}
}

func TestReportOutsideRepositorySaysSo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required by this test: %v", err)
	}
	root := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(root))
	writeFile(t, root, "a.txt", "a\n")
	writeFile(t, root, "b.txt", "b\n")
	out, port, report := runEditTask(t, root)
	if out.Git == nil || out.Git.Before.Repo || out.Git.Before.Reason != gitstate.ReasonNotRepo {
		t.Errorf("Outcome.Git = %+v; want not a repository", out.Git)
	}
	if !strings.Contains(report, "## Git\n\ngit state unknown: not a git repository") {
		t.Errorf("report lacks the git state:\n%s", report)
	}
	for _, n := range port.notes() {
		if strings.Contains(n, "uncommitted") {
			t.Errorf("warning outside a repository: %q", n)
		}
	}
}

func TestReportWithoutGitBinarySaysSo(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.txt", "a\n")
	writeFile(t, root, "b.txt", "b\n")
	if _, err := exec.LookPath("git"); err == nil {
		gitIn(t, root, "init", "-q") // a repository, but no git to read it
	}
	t.Setenv("PATH", t.TempDir()) // an empty folder: no git binary
	out, _, report := runEditTask(t, root)
	if out.Git == nil || out.Git.Before.Repo || out.Git.Before.Reason != gitstate.ReasonNoGit {
		t.Errorf("Outcome.Git = %+v; want git not installed", out.Git)
	}
	if !strings.Contains(report, "git state unknown: "+gitstate.ReasonNoGit) {
		t.Errorf("report lacks the git state:\n%s", report)
	}
}

// TestReportWithSandboxOffRunsNoGit: with the sandbox off, git is not run
// at all (a planted clean filter stays unrun); the report still gives the
// branch and HEAD, read from the files, and says the uncommitted files
// were not read.
func TestReportWithSandboxOffRunsNoGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required by this test: %v", err)
	}
	root := t.TempDir()
	writeFile(t, root, "a.txt", "a\n")
	writeFile(t, root, "b.txt", "b\n")
	writeFile(t, root, ".gitattributes", "*.txt filter=x\n")
	gitIn(t, root, "init", "-q", "-b", "trunk")
	gitIn(t, root, "add", ".")
	gitIn(t, root, "-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "first")
	marker := filepath.Join(t.TempDir(), "ran")
	gitIn(t, root, "config", "filter.x.clean", "touch "+marker+"; cat")
	writeFile(t, root, "a.txt", "a, edited by the user\n")

	out, _, report := runEditTaskWith(t, root, func(s *session.Settings) { s.Sandbox = "off" })
	if _, err := os.Stat(marker); err == nil {
		t.Error("the repository's clean filter ran with the sandbox off")
	}
	g := out.Git
	if g == nil || g.Before == nil || !g.Before.Repo || g.Before.Branch != "trunk" || len(g.Before.Head) != 7 || g.Before.NoStatus == "" {
		t.Fatalf("Outcome.Git = %+v; want branch and HEAD read from the files, status not read", g)
	}
	for _, want := range []string{"- before: trunk at " + g.Before.Head + "\n", "- uncommitted before the task: " + gitstate.NoStatusNoSandbox} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}
