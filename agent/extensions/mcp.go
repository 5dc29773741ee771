package extensions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/mcp"
)

// MCP servers reach a task from three places, in this order of precedence
// when two share a name: the user's mcpServers setting, the face's own
// (ACP session/new mcpServers: the user's editor configuration), and the
// workspace's .mcp.json, which a repository controls and which is used
// only once the user approved that file's servers (the same content: a
// changed file asks again).

// MCPFileName is the workspace's MCP configuration, in Claude Code's name
// and shape.
const MCPFileName = ".mcp.json"

// ServerOptions configure the MCP servers of a host.
type ServerOptions struct {
	// Permission asks the user about a workspace's .mcp.json and keeps
	// the answers.
	Permission *permission.Service
	// Getenv reads the environment (${NAME} in configurations); nil:
	// os.Getenv.
	Getenv func(string) string
	// Logger is the host's current log; nil discards.
	Logger func() *slog.Logger
	// Redact hides the secrets of the current settings in what the user
	// is shown of a server.
	Redact func(string) string
}

// Servers are the MCP servers of one host's tasks: started once, shared
// by its tasks, stopped by Close.
type Servers struct {
	o       ServerOptions
	manager *mcp.Manager
}

// NewServers returns the servers of a host; none runs yet.
func NewServers(o ServerOptions) *Servers {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		discard := slog.New(slog.DiscardHandler)
		o.Logger = func() *slog.Logger { return discard }
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	return &Servers{o: o, manager: mcp.NewManager(o.Logger())}
}

// Close stops every server.
func (s *Servers) Close() { s.manager.Close() }

// Start starts servers in the background under launch, each with the
// long first-start limit, so tasks find their tools ready; it returns at
// once. launch.Progress and launch.Failure tell what happens.
func (s *Servers) Start(servers []mcp.ServerConfig, launch mcp.Launch) {
	s.manager.Start(servers, launch)
}

// StateDir is the folder under which each server of root's .mcp.json
// gets the only folder it may write (<dir>/<server name>): in agentls's
// state folder ($XDG_STATE_HOME/agentls, else ~/.local/state/agentls),
// out of every workspace and of the caches commands may write, one per
// root.
func StateDir(root string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	base := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("the MCP servers' folders: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return filepath.Join(base, "agentls", "mcp-servers", filepath.Base(root)+"-"+hex.EncodeToString(sum[:6])), nil
}

// TaskServers are the MCP servers of one task and what failed of them,
// for its report. The nil value is a task without servers.
type TaskServers struct {
	s      *Servers
	list   []mcp.ServerConfig
	mu     sync.Mutex // guards failed
	failed []string
}

// ForTask returns the servers a task may use: the user's (user), the
// face's (client), and the workspace's .mcp.json in root once the user
// approved it (asked through asker here, before the task starts, like
// changed settings; nil: a face that cannot ask). prompt is the task's,
// for the question.
func (s *Servers) ForTask(ctx context.Context, user, client []mcp.ServerConfig, root, prompt string, asker permission.Asker) *TaskServers {
	out := slices.Clone(user)
	have := func(name string) bool {
		return slices.ContainsFunc(out, func(c mcp.ServerConfig) bool { return c.Name == name })
	}
	for _, c := range client {
		if have(c.Name) {
			s.o.Logger().Warn("mcp server of the client ignored: the user's settings have one of that name", "server", c.Name)
			continue
		}
		out = append(out, c)
	}
	for _, c := range s.workspace(ctx, root, prompt, asker) {
		if have(c.Name) {
			s.o.Logger().Warn("mcp server of .mcp.json ignored: the user's settings or the client have one of that name", "server", c.Name)
			continue
		}
		out = append(out, c)
	}
	// Every source's secrets, before any server starts or says anything.
	redact.Configure(MCPSecrets(out, s.o.Getenv)...)
	return &TaskServers{s: s, list: out}
}

// workspace returns the servers of root's .mcp.json when the user
// approved that content: once for this host, or always (kept in the
// user's configuration folder, by root and content hash). The user is
// asked once per content; a no holds for this host.
func (s *Servers) workspace(ctx context.Context, root, prompt string, asker permission.Asker) []mcp.ServerConfig {
	path := filepath.Join(root, MCPFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.o.Logger().Warn("workspace mcp servers not read", "file", path, "error", err)
		return nil
	}
	servers, err := mcp.ParseServers(b, mcp.FromWorkspace)
	if err != nil {
		s.o.Logger().Warn("workspace mcp servers not used", "file", path, "error", err)
		return nil
	}
	if len(servers) == 0 {
		return nil
	}
	sum := sha256.Sum256(b)
	descs := make([]string, len(servers))
	stateDir, _ := StateDir(root, s.o.Getenv)
	for i, c := range servers {
		descs[i] = c.Describe()
		if stateDir != "" {
			descs[i] += "; in the sandbox, writing only " + filepath.Join(stateDir, c.Name)
		}
	}
	// Remembered by the root and the file's content: a yes or a no holds
	// for the session, "always" for the root (approved-mcp.json); a changed
	// file, or a question the face could not ask, is asked about again.
	d, err := s.o.Permission.Ask(ctx, permission.Request{
		Kind:   permission.KindMCPFile,
		TaskID: "(not started)",
		Prompt: prompt,
		Root:   filepath.Clean(root),
		Tool:   "mcp servers",
		Title: fmt.Sprintf("start the MCP servers of %s (a file of the workspace: the repository controls it): %s",
			path, strings.Join(descs, "; ")),
		Paths:  []string{MCPFileName},
		Always: MCPFileName,
		NS:     permission.NSMCPFile,
		Key:    mcpFileKey(sum),
		Yes:    permission.Session,
		No:     permission.Session,
	}, asker)
	if err != nil || !d.Allows() {
		s.o.Logger().Warn("the MCP servers of the workspace's .mcp.json are not used: the user did not approve them", "file", path, "error", err)
		return nil
	}
	s.o.Logger().Info("the user approved the MCP servers of the workspace's .mcp.json", "file", path, "servers", descs)
	return servers
}

// mcpFileKey is what an answer about a .mcp.json of content hash sum is
// remembered by, under its root (the request's Root): kept for the root in
// approved-mcp.json as the hash alone, the file's format since it was
// first written.
func mcpFileKey(sum [sha256.Size]byte) string {
	return hex.EncodeToString(sum[:])
}

// Tools are the tools of the task's servers, started under launch (or
// the start under way waited for) now, fixed for the task; ap approves
// their calls. A wait for a start under way is shown at once in the
// task's progress (note hears it before the task starts; nil: none), and
// a server that offers none, or a call that fails for a server's sake,
// is a problem in the task's progress (g) and its report (Section).
func (t *TaskServers) Tools(launch func() mcp.Launch, ap tools.Approver, g *agent.Guard, note agent.Sink) []tools.Tool {
	if t == nil || len(t.list) == 0 {
		return nil
	}
	redactText := t.s.o.Redact
	l := launch()
	l.Progress = func(text string) {
		text = redactText(text)
		if note != nil && g.TaskID() == "" {
			note.Event(agent.Event{Kind: agent.EventNote, Text: text})
		} else {
			g.Warn(text)
		}
	}
	l.Failure = func(text string) {
		text = "MCP: " + redactText(text)
		t.fail(text)
		g.Problem(text)
	}
	// Bounded by each server's start timeout; the task has no context yet.
	list, errs := t.s.manager.Tools(context.Background(), t.list, l, ap)
	for _, err := range errs {
		text := "MCP: " + redactText(err.Error())
		t.fail(text)
		g.Problem(text)
	}
	return list
}

func (t *TaskServers) fail(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(t.failed, text) {
		t.failed = append(t.failed, text)
	}
}

// Section is the report's "MCP servers" section; "" when nothing failed.
func (t *TaskServers) Section() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.failed) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## MCP servers\n\nWhat failed (the end of each server's stderr included):\n")
	for _, it := range t.failed {
		b.WriteString("\n" + fence(it))
	}
	return b.String()
}

// MCPSecrets are the values of the servers' env and headers that are
// secrets (redact.ConfigSecrets: by name, every Authorization header,
// values that look generated) and what their URLs carry: hidden from
// every sink like the API key. Whoever brings servers (the user's
// settings, a workspace .mcp.json, an ACP client) hands them to
// redact.Configure through it.
func MCPSecrets(servers []mcp.ServerConfig, getenv func(string) string) []string {
	var out []string
	for _, c := range servers {
		c = c.Expanded(getenv)
		out = append(out, redact.ConfigSecrets(c.Env)...)
		out = append(out, redact.ConfigSecrets(c.Headers)...)
		out = append(out, redact.URLSecrets(c.URL)...)
	}
	return out
}

// Listed are the MCP tools agentls.tools and /tools list: those of the
// user's servers (user) and of root's .mcp.json when the user approved it
// already (listing never asks). Servers not yet started are started under
// launch, each within its start timeout; one that fails is logged only.
func (s *Servers) Listed(ctx context.Context, user []mcp.ServerConfig, root string, launch func() mcp.Launch) []tools.Tool {
	servers := slices.Clone(user)
	if b, err := os.ReadFile(filepath.Join(root, MCPFileName)); err == nil {
		sum := sha256.Sum256(b)
		if d, err := s.o.Permission.Ask(ctx, permission.Request{Kind: permission.KindMCPFile, Root: filepath.Clean(root),
			NS: permission.NSMCPFile, Key: mcpFileKey(sum)}, nil); err == nil && d.Allows() {
			if ws, err := mcp.ParseServers(b, mcp.FromWorkspace); err == nil {
				for _, c := range ws {
					if !slices.ContainsFunc(servers, func(u mcp.ServerConfig) bool { return u.Name == c.Name }) {
						servers = append(servers, c)
					}
				}
			}
		}
	}
	if len(servers) == 0 {
		return nil
	}
	redact.Configure(MCPSecrets(servers, s.o.Getenv)...)
	list, errs := s.manager.Tools(ctx, servers, launch(), nil)
	for _, err := range errs {
		s.o.Logger().Warn("mcp server not listed", "error", s.o.Redact(err.Error()))
	}
	return list
}
