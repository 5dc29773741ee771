package extensions

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/mcp"
)

// asker answers every question with answer and keeps the questions.
type asker struct {
	answer tools.Decision

	mu        sync.Mutex // guards questions
	questions []permission.Request
}

func (a *asker) AskUser(_ context.Context, q permission.Request) (tools.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.questions = append(a.questions, q)
	return a.answer, nil
}

func (a *asker) asked() []permission.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]permission.Request(nil), a.questions...)
}

// newServers are the servers of a fresh host (a restart) whose remembered
// answers live in the user's configuration folder ($XDG_CONFIG_HOME).
func newServers(t *testing.T) *Servers {
	s := NewServers(ServerOptions{Permission: permission.New(permission.NewStore("")), Getenv: func(string) string { return "" }})
	t.Cleanup(s.Close)
	return s
}

// TestWorkspaceMCPAlwaysIsKeptPerContent: "Always allow" for a
// workspace's .mcp.json holds for later hosts (a restart) while the file
// is the same, and a changed file is asked about again.
func TestWorkspaceMCPAlwaysIsKeptPerContent(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := t.TempDir()
	file := filepath.Join(root, MCPFileName)
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"repo": {"command": "repo-mcp"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	always := &asker{answer: tools.AllowAlways}
	s1 := newServers(t)
	if got := s1.workspace(ctx, root, "p", always); len(got) != 1 || got[0].Name != "repo" || got[0].NetworkAllowed() {
		t.Fatalf("approved: %+v; want the repo server, without network", got)
	}
	if q := always.asked(); len(q) != 1 || q[0].Always != MCPFileName {
		t.Fatalf("questions %+v; want one offering Always allow .mcp.json", q)
	}
	deny := &asker{answer: tools.Deny}
	s2 := newServers(t)
	if got := s2.workspace(ctx, root, "p", deny); len(got) != 1 || len(deny.asked()) != 0 {
		t.Errorf("after a restart: %d servers, %d questions; want the approved file used unasked", len(got), len(deny.asked()))
	}
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"repo": {"command": "sh", "args": ["-c", "evil"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := s2.workspace(ctx, root, "p", deny); len(got) != 0 || len(deny.asked()) != 1 {
		t.Errorf("changed file: %d servers, %d questions; want it asked about and, denied, unused", len(got), len(deny.asked()))
	}
}

// TestServersForTaskOrderAndPrecedence: a task gets the user's servers,
// then the face's, then the approved .mcp.json's; a name the user's
// settings hold already keeps the user's server, whoever else names it.
// A .mcp.json the user denies adds nothing, and a face that cannot ask
// (no asker) gets none of it either.
func TestServersForTaskOrderAndPrecedence(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, MCPFileName), []byte(`{"mcpServers": {"mine": {"command": "repo-mine"}, "repo": {"command": "repo-mcp"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	user := []mcp.ServerConfig{{Name: "mine", Command: "my-mcp", Source: mcp.FromSettings}}
	client := []mcp.ServerConfig{{Name: "mine", Command: "client-mine", Source: mcp.FromClient}, {Name: "editor", Command: "editor-mcp", Source: mcp.FromClient}}
	names := func(ts *TaskServers) string {
		var out []string
		for _, c := range ts.list {
			out = append(out, c.Name+"="+c.Command)
		}
		return strings.Join(out, " ")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		asker permission.Asker
		want  string
	}{
		{"approved", &asker{answer: tools.AllowForTask}, "mine=my-mcp editor=editor-mcp repo=repo-mcp"},
		{"denied", &asker{answer: tools.Deny}, "mine=my-mcp editor=editor-mcp"},
		{"cannot ask", nil, "mine=my-mcp editor=editor-mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(newServers(t).ForTask(ctx, user, client, root, "p", tc.asker)); got != tc.want {
				t.Errorf("ForTask = %q; want %q", got, tc.want)
			}
		})
	}
}

// recSink keeps the events it hears.
type recSink struct {
	mu     sync.Mutex // guards events
	events []agent.Event
}

func (s *recSink) Event(e agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

// TestTaskServersReportWhatFailed: a server of the user's that does not
// start (a real process that exits) gives the task no tools; its failure,
// with the end of its stderr, is the report's "MCP servers" section, once
// however often it is met. A task without servers reports nothing.
func TestTaskServersReportWhatFailed(t *testing.T) {
	root := t.TempDir()
	s := newServers(t)
	broken := mcp.ServerConfig{Name: "github", Command: "sh", Source: mcp.FromSettings,
		Args: []string{"-c", `echo "npm error 404 Not Found - @acme/github-mcp" >&2; exit 1`}}
	ts := &TaskServers{s: s, list: []mcp.ServerConfig{broken}}
	launch := func() mcp.Launch {
		return mcp.Launch{Dir: root, Roots: []string{root}, Commands: tools.NewCommands(), Getenv: func(string) string { return "" }}
	}
	if list := ts.Tools(launch, nil, agent.NewGuard(), &recSink{}); len(list) != 0 {
		t.Errorf("tools of a server that did not start: %d; want none", len(list))
	}
	failed := func() []string {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return slices.Clone(ts.failed)
	}
	if f := failed(); len(f) != 1 {
		t.Fatalf("failures kept: %q; want the one start failure", f)
	}
	ts.fail(failed()[0]) // met again: kept once
	if f := failed(); len(f) != 1 {
		t.Errorf("failures kept after the same one again: %q; want it once", f)
	}
	sec := ts.Section()
	if !strings.HasPrefix(sec, "\n## MCP servers\n") || !strings.Contains(sec, "npm error 404 Not Found - @acme/github-mcp") {
		t.Errorf("Section = %q; want the failure with the end of the server's stderr", sec)
	}
	if n := strings.Count(sec, "```\n"); n%2 != 0 || n == 0 {
		t.Errorf("Section = %q; want each failure fenced", sec)
	}
	var none *TaskServers
	if sec := none.Section(); sec != "" || none.Tools(launch, nil, agent.NewGuard(), nil) != nil {
		t.Errorf("a task without servers: Section %q; want nothing", sec)
	}
}
