package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// notes records what a Launch's Notify hears.
type notes struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // gets a value at each line
}

func newNotes() *notes { return &notes{added: make(chan struct{}, 100)} }

func (n *notes) notify(s string) {
	n.mu.Lock()
	n.lines = append(n.lines, s)
	n.mu.Unlock()
	select {
	case n.added <- struct{}{}:
	default:
	}
}

func (n *notes) has(sub string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func (n *notes) all() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.lines, "\n")
}

// waitFor waits until a line holding sub was heard, or the test's
// deadline.
func (n *notes) waitFor(t *testing.T, sub string) {
	t.Helper()
	for !n.has(sub) {
		select {
		case <-n.added:
		case <-time.After(time.Minute):
			t.Fatalf("never heard %q; heard:\n%s", sub, n.all())
		}
	}
}

// homeFolder is a folder of the home folder: outside the workspace, the
// caches and /tmp, where sandboxed programs may not write.
func homeFolder(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(home, ".agentls-mcp-userprog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestUserServerKeepsStateBesideItself: a server of the user's settings
// (and one of the ACP client) runs as the user's program: it writes the
// state file beside its executable, in a folder commands may not write,
// and starts. The same server named by a workspace's .mcp.json cannot,
// and its start failure carries its stderr.
func TestUserServerKeepsStateBesideItself(t *testing.T) {
	dir := homeFolder(t)
	bin := filepath.Join(dir, "mcpserver")
	b, err := os.ReadFile(serverBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range []Source{FromSettings, FromClient, FromWorkspace} {
		t.Run(string(src), func(t *testing.T) {
			os.Remove(filepath.Join(dir, "state.json"))
			f := newFixture(t)
			f.launch.StateDir = filepath.Join(homeFolder(t), "servers")
			cfg := ServerConfig{Name: "stateful", Command: bin, Args: []string{"-state", "beside"}, Source: src}
			list, errs := f.m.Tools(context.Background(), []ServerConfig{cfg}, f.launch, nil)
			_, statErr := os.Stat(filepath.Join(dir, "state.json"))
			if src == FromWorkspace {
				if len(list) != 0 || len(errs) != 1 || statErr == nil {
					t.Fatalf("the repository's server: %d tools, errors %v, state written %v; want it kept from writing beside itself", len(list), errs, statErr == nil)
				}
				if !strings.Contains(errs[0].Error(), "cannot keep its state") {
					t.Errorf("error %q; want the server's stderr in it", errs[0])
				}
				return
			}
			if len(errs) != 0 || len(list) != serverTools || statErr != nil {
				t.Fatalf("the user's server: %d tools, errors %v, state file %v; want it started with its state beside it", len(list), errs, statErr)
			}
		})
	}
}

// TestWorkspaceServerWritesOnlyItsOwnFolder: a server of a workspace's
// .mcp.json writes its own folder (StateDir/<name>) and nothing else: not
// the workspace, not the home folder, not the caches; without a folder
// of its own it does not start.
func TestWorkspaceServerWritesOnlyItsOwnFolder(t *testing.T) {
	stateDir := filepath.Join(homeFolder(t), "servers")
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	other := homeFolder(t)
	for i, tc := range []struct {
		dir   func(ws string) string
		start bool
	}{
		{func(string) string { return filepath.Join(stateDir, "repo0") }, true},
		{func(ws string) string { return ws }, false},
		{func(string) string { return other }, false},
		{func(string) string { return cache }, false},
		{func(string) string { return filepath.Join(stateDir, "repo0") }, false}, // another server's folder
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			f := newFixture(t)
			f.launch.StateDir = stateDir
			target := tc.dir(f.launch.Dir)
			name := fmt.Sprintf("repo%d", i)
			cfg := ServerConfig{Name: name, Command: serverBin, Args: []string{"-state", target}, Source: FromWorkspace}
			list, errs := f.m.Tools(context.Background(), []ServerConfig{cfg}, f.launch, nil)
			_, statErr := os.Stat(filepath.Join(target, "state.json"))
			if i != 4 && target != filepath.Join(stateDir, name) {
				defer os.Remove(filepath.Join(target, "state.json"))
			}
			if got := len(errs) == 0 && len(list) == serverTools; got != tc.start {
				t.Fatalf("writing %s: started %v (errors %v); want %v", target, got, errs, tc.start)
			}
			if !tc.start && i != 4 && statErr == nil {
				t.Errorf("%s/state.json exists; want it never written", target)
			}
		})
	}
	f := newFixture(t)
	_, errs := f.m.Tools(context.Background(), []ServerConfig{{Name: "nofolder", Command: serverBin, Source: FromWorkspace}}, f.launch, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "no folder of its own") {
		t.Errorf("errors %v; want the server refused without a folder of its own", errs)
	}
}

// TestServerThatExitedStartsAtNextNeed: a server that could not start is
// not remembered as unavailable: the next task starts it again, and it
// works once what it needed is there.
func TestServerThatExitedStartsAtNextNeed(t *testing.T) {
	f := newFixture(t)
	state := filepath.Join(homeFolder(t), "later")
	cfg := ServerConfig{Name: "later", Command: serverBin, Args: []string{"-state", state}, Source: FromSettings}
	if list, errs := f.m.Tools(context.Background(), []ServerConfig{cfg}, f.launch, nil); len(errs) != 1 || len(list) != 0 {
		t.Fatalf("first start: %d tools, %v; want it to fail (its folder is missing)", len(list), errs)
	}
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if list, errs := f.m.Tools(context.Background(), []ServerConfig{cfg}, f.launch, nil); len(errs) != 0 || len(list) != serverTools {
		t.Fatalf("next need: %d tools, %v; want the server started again", len(list), errs)
	}
}

// TestStartFailureCarriesTheEndOfStderr: the error of a server that did
// not start ends with the last lines of its stderr, bounded.
func TestStartFailureCarriesTheEndOfStderr(t *testing.T) {
	f := newFixture(t)
	cfg := ServerConfig{Name: "noisy", Command: "sh", Source: FromSettings,
		Args: []string{"-c", `for i in $(seq 1 500); do echo "npm warn line $i" >&2; done; echo "npm error 404 Not Found: @acme/mcp-server" >&2; exit 1`}}
	_, errs := f.m.Tools(context.Background(), []ServerConfig{cfg}, f.launch, nil)
	if len(errs) != 1 {
		t.Fatalf("errors %v; want one", errs)
	}
	msg := errs[0].Error()
	if !strings.Contains(msg, "exited with code 1") || !strings.HasSuffix(msg, "npm error 404 Not Found: @acme/mcp-server") ||
		!strings.Contains(msg, "npm warn line 500") {
		t.Errorf("error %q; want the exit code and the end of stderr", msg)
	}
	if len(msg) > StderrTail+300 || strings.Contains(msg, "npm warn line 1\n") {
		t.Errorf("error of %d bytes; want the stderr bounded to its last %d", len(msg), StderrTail)
	}
}

// TestBackgroundStartIsWaitedForOnce: the session starts the server in
// the background with the long first-start limit and says so; a task
// that needs it meanwhile waits for that start (told so), never starting
// another, and gets its tools.
func TestBackgroundStartIsWaitedForOnce(t *testing.T) {
	f := newFixture(t)
	gate := filepath.Join(homeFolder(t), "gate")
	// Stands for npx downloading: the server starts once the gate exists.
	cfg := ServerConfig{Name: "slow", Command: "sh", Source: FromSettings,
		Args: []string{"-c", `while [ ! -e "$1" ]; do sleep 0.05; done; echo started >> "$1"; exec "$2"`, "sh", gate, serverBin}}
	n := newNotes()
	f.launch.Progress = n.notify
	f.m.Start([]ServerConfig{cfg}, f.launch)
	n.waitFor(t, "starting MCP server slow (up to 2m0s)")
	type listing struct {
		n    int
		errs []error
	}
	got := make(chan listing, 1)
	go func() {
		list, errs := f.m.Tools(context.Background(), []ServerConfig{cfg}, f.launch, nil)
		got <- listing{len(list), errs}
	}()
	n.waitFor(t, "waiting for the MCP server slow to start")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if len(l.errs) != 0 || l.n != serverTools {
		t.Fatalf("the waiting task got %d tools, %v; want the %d of the server the session started", l.n, l.errs, serverTools)
	}
	if b, _ := os.ReadFile(gate); strings.Count(string(b), "started") != 1 {
		t.Errorf("the server started %d times; want once", strings.Count(string(b), "started"))
	}
}

// TestDownloaderNamed: a server started through npx or uvx says that it
// may be downloading.
func TestDownloaderNamed(t *testing.T) {
	s := &server{cfg: ServerConfig{Name: "github", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}}}
	if got := s.startingText(); got != "starting MCP server github: npx may be downloading it (up to 2m0s)" {
		t.Errorf("startingText = %q", got)
	}
	s = &server{cfg: ServerConfig{Name: "py", Command: "uv", Args: []string{"tool", "run", "x"}}, started: true}
	if got := s.startingText(); got != "starting MCP server py: uv tool may be downloading it (up to 10s)" {
		t.Errorf("startingText = %q", got)
	}
}

// serverTools is how many tools testdata/mcpserver offers by default.
const serverTools = 9
