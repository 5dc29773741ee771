package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentls/agentls/agent/permission"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/workspace"
)

// MCP servers reach a task from three places, in this order of precedence
// when two share a name: the user's mcpServers setting, the face's own
// (ACP session/new mcpServers: the user's editor configuration), and the
// workspace's .mcp.json, which a repository controls and which is used
// only once the user approved that file's servers (the same content: a
// changed file asks again).

// MCPServerSource is implemented by a port whose face brings MCP servers
// of its own (ACP's session/new mcpServers).
type MCPServerSource interface {
	MCPServers() []mcp.ServerConfig
}

// MCPFileName is the workspace's MCP configuration, in Claude Code's name
// and shape.
const MCPFileName = ".mcp.json"

// mcpServersSetting is the "mcpServers" setting: .mcp.json's shape, either
// the map of servers or the whole file.
var mcpServersSetting = field{
	name: "mcpServers",
	set: func(c *Settings, raw json.RawMessage) error {
		v, err := mcp.ParseServers(raw, mcp.FromSettings)
		if err != nil {
			return err
		}
		c.MCPServers = v
		return nil
	},
	value: func(c Settings) any {
		if c.MCPServers == nil {
			return nil
		}
		m := make(map[string]mcp.ServerConfig, len(c.MCPServers))
		for _, s := range c.MCPServers {
			m[s.Name] = s
		}
		return m
	},
	show: func(c Settings) any {
		out := make([]string, 0, len(c.MCPServers))
		for _, s := range c.MCPServers {
			out = append(out, s.Describe()) // names of env and headers, never their values
		}
		return out
	},
}

// mcpWidenings are the servers of s that base does not have (by name and
// configuration): a server runs a program, so a new one is a widening.
func mcpWidenings(base, s Settings) []string {
	var out []string
	for _, c := range s.MCPServers {
		if !slices.ContainsFunc(base.MCPServers, func(b mcp.ServerConfig) bool { return sameServer(b, c) }) {
			out = append(out, fmt.Sprintf("mcpServers %q (%s)", c.Name, c.Describe()))
		}
	}
	return out
}

// mcpNarrowed keeps the servers of s that base has.
func mcpNarrowed(base, s Settings) []mcp.ServerConfig {
	return slices.DeleteFunc(slices.Clone(s.MCPServers), func(c mcp.ServerConfig) bool {
		return !slices.ContainsFunc(base.MCPServers, func(b mcp.ServerConfig) bool { return sameServer(b, c) })
	})
}

func sameServer(a, b mcp.ServerConfig) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return a.Name == b.Name && string(ja) == string(jb)
}

// mcpServers are the servers task may use under s: the user's, the
// port's, and the workspace's .mcp.json once the user approved it (asked
// here, before the task starts, like changed settings).
func (h *Host) mcpServers(ctx context.Context, s Settings, prompt string, ws *workspace.Workspace, port Port) []mcp.ServerConfig {
	out := slices.Clone(s.MCPServers)
	have := func(name string) bool {
		return slices.ContainsFunc(out, func(c mcp.ServerConfig) bool { return c.Name == name })
	}
	if src, ok := port.(MCPServerSource); ok {
		for _, c := range src.MCPServers() {
			if have(c.Name) {
				h.logger().Warn("mcp server of the client ignored: the user's settings have one of that name", "server", c.Name)
				continue
			}
			out = append(out, c)
		}
	}
	for _, c := range h.workspaceMCP(ctx, ws.Roots()[0], prompt, port) {
		if have(c.Name) {
			h.logger().Warn("mcp server of .mcp.json ignored: the user's settings or the client have one of that name", "server", c.Name)
			continue
		}
		out = append(out, c)
	}
	// Every source's secrets, before any server starts or says anything.
	redact.Configure(MCPSecrets(out, h.opts.Getenv)...)
	return out
}

// workspaceMCP returns the servers of root's .mcp.json when the user
// approved that content: once for this host, or always (kept in the
// user's configuration folder, by root and content hash). The user is
// asked once per content; a no holds for this host.
func (h *Host) workspaceMCP(ctx context.Context, root, prompt string, port Port) []mcp.ServerConfig {
	path := filepath.Join(root, MCPFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		h.logger().Warn("workspace mcp servers not read", "file", path, "error", err)
		return nil
	}
	servers, err := mcp.ParseServers(b, mcp.FromWorkspace)
	if err != nil {
		h.logger().Warn("workspace mcp servers not used", "file", path, "error", err)
		return nil
	}
	if len(servers) == 0 {
		return nil
	}
	sum := sha256.Sum256(b)
	descs := make([]string, len(servers))
	stateDir, _ := MCPStateDir(root, h.opts.Getenv)
	for i, c := range servers {
		descs[i] = c.Describe()
		if stateDir != "" {
			descs[i] += "; in the sandbox, writing only " + filepath.Join(stateDir, c.Name)
		}
	}
	var asker permission.Asker
	if port != nil {
		asker = port
	}
	// Remembered by the root and the file's content: a yes or a no holds
	// for the session, "always" for the root (approved-mcp.json); a changed
	// file, or a question the face could not ask, is asked about again.
	d, err := h.perm.Ask(ctx, permission.Request{
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
		h.logger().Warn("the MCP servers of the workspace's .mcp.json are not used: the user did not approve them", "file", path, "error", err)
		return nil
	}
	h.logger().Info("the user approved the MCP servers of the workspace's .mcp.json", "file", path, "servers", descs)
	return servers
}

// mcpFileKey is what an answer about a .mcp.json of content hash sum is
// remembered by, under its root (the request's Root): kept for the root in
// approved-mcp.json as the hash alone, the file's format since it was
// first written.
func mcpFileKey(sum [sha256.Size]byte) string {
	return hex.EncodeToString(sum[:])
}

// ApprovedMCPFile is where "always" answers about workspace .mcp.json
// files are kept: beside AllowedCommandsFile in the user's configuration
// folder, out of every workspace, as the content hashes approved per root
// (permission.Store).
func ApprovedMCPFile() (string, error) {
	return permission.NewStore("").Path(permission.Root, permission.NSMCPFile)
}

// mcpTools are the tools of servers for one task: listed (servers
// started, or the start under way waited for) now, fixed for the task; a
// server that offers none, or a call that fails for a server's sake, is a
// problem in the task's progress and report.
func (h *Host) mcpTools(ws *workspace.Workspace, s Settings, servers []mcp.ServerConfig, ap tools.Approver, g *agent.Guard, port Port, problems *problemLog) []tools.Tool {
	if len(servers) == 0 {
		return nil
	}
	launch := h.taskMCPLaunch(ws, s, port, g, problems)
	// Bounded by each server's start timeout; the task has no context yet.
	list, errs := h.mcp.Tools(context.Background(), servers, launch, ap)
	for _, err := range errs {
		text := "MCP: " + h.Redactor().String(err.Error())
		problems.add(text)
		g.Problem(text)
	}
	return list
}

// mcpSecrets are the secrets of the user's MCP servers (MCPSecrets).
func mcpSecrets(s Settings, getenv func(string) string) []string {
	return MCPSecrets(s.MCPServers, getenv)
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

// listedMCPTools are the MCP tools agentls.tools and /tools list: those of
// the user's servers and of a workspace .mcp.json the user approved
// already (listing never asks). Servers not yet started are started, each
// within its start timeout; one that fails is listed as an error line by
// the caller's log only.
func (h *Host) listedMCPTools(ctx context.Context, ws *workspace.Workspace, s Settings) []tools.Tool {
	servers := slices.Clone(s.MCPServers)
	root := ws.Roots()[0]
	if b, err := os.ReadFile(filepath.Join(root, MCPFileName)); err == nil {
		sum := sha256.Sum256(b)
		if d, err := h.perm.Ask(ctx, permission.Request{Kind: permission.KindMCPFile, Root: filepath.Clean(root),
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
	redact.Configure(MCPSecrets(servers, h.opts.Getenv)...)
	list, errs := h.mcp.Tools(ctx, servers, h.mcpLaunch(ws, s), nil)
	for _, err := range errs {
		h.logger().Warn("mcp server not listed", "error", h.Redactor().String(err.Error()))
	}
	return list
}
