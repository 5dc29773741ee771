package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/workspace"
	"github.com/agentls/agentls/workspace/ownfs"
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
	key := filepath.Clean(root) + "\x00" + hex.EncodeToString(sum[:])
	h.mu.Lock()
	answer, asked := h.mcpFiles[key]
	h.mu.Unlock()
	if asked {
		if answer {
			return servers
		}
		return nil
	}
	if approvedAlways(root, hex.EncodeToString(sum[:])) {
		h.setMCPFile(key, true)
		return servers
	}
	descs := make([]string, len(servers))
	for i, c := range servers {
		descs[i] = c.Describe()
	}
	d := tools.Deny
	if port != nil {
		d, err = port.Ask(ctx, Question{
			TaskID: "(not started)",
			Prompt: prompt,
			Request: tools.ApprovalRequest{
				Tool: "mcp servers",
				Summary: fmt.Sprintf("start the MCP servers of %s (a file of the workspace: the repository controls it): %s",
					path, strings.Join(descs, "; ")),
			},
			AlwaysPrefix: MCPFileName,
		})
	}
	if err != nil || d == tools.Deny {
		h.logger().Warn("the MCP servers of the workspace's .mcp.json are not used: the user did not approve them", "file", path, "error", err)
		if err == nil || ctx.Err() == nil {
			h.setMCPFile(key, false)
		}
		return nil
	}
	h.setMCPFile(key, true)
	if d == tools.AllowAlways {
		if err := approveAlways(root, hex.EncodeToString(sum[:])); err != nil {
			h.logger().Warn("cannot remember the approved .mcp.json", "error", err)
		}
	}
	h.logger().Info("the user approved the MCP servers of the workspace's .mcp.json", "file", path, "servers", descs)
	return servers
}

func (h *Host) setMCPFile(key string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mcpFiles == nil {
		h.mcpFiles = map[string]bool{}
	}
	h.mcpFiles[key] = ok
}

// ApprovedMCPFile is where "always" answers about workspace .mcp.json
// files are kept: beside AllowedCommandsFile in the user's configuration
// folder, out of every workspace, as the content hashes approved per root.
func ApprovedMCPFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("approved mcp servers: %w", err)
	}
	return filepath.Join(dir, "agentls", "approved-mcp.json"), nil
}

type approvedMCP struct {
	Roots map[string][]string `json:"roots"` // root -> sha256 of approved .mcp.json contents
}

func readApprovedMCP() (approvedMCP, string, error) {
	var a approvedMCP
	path, err := ApprovedMCPFile()
	if err != nil {
		return a, "", err
	}
	b, err := ownfs.ReadOwnFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return a, path, nil
	}
	if err != nil {
		return a, path, err
	}
	return a, path, json.Unmarshal(b, &a)
}

func approvedAlways(root, sum string) bool {
	settingsMu.Lock()
	defer settingsMu.Unlock()
	a, _, err := readApprovedMCP()
	return err == nil && slices.Contains(a.Roots[filepath.Clean(root)], sum)
}

func approveAlways(root, sum string) error {
	settingsMu.Lock()
	defer settingsMu.Unlock()
	a, path, err := readApprovedMCP()
	if err != nil {
		return err
	}
	if a.Roots == nil {
		a.Roots = map[string][]string{}
	}
	root = filepath.Clean(root)
	a.Roots[root] = append(a.Roots[root], sum)
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	// Replaced by a rename in agentls's folder, no link followed.
	return ownfs.ReplaceFile(path, b, 0o600)
}

// mcpTools are the tools of servers for one task: listed (servers
// started) now, fixed for the task; a server that offers none is a note
// in the task's progress.
func (h *Host) mcpTools(ws *workspace.Workspace, s Settings, servers []mcp.ServerConfig, ap tools.Approver, g *agent.Guard) []tools.Tool {
	if len(servers) == 0 {
		return nil
	}
	launch := mcp.Launch{Dir: ws.Roots()[0], Roots: ws.Roots(), Sandbox: s.Sandbox, SecretEnv: []string{s.APIKeyEnv},
		Commands: h.commands, Getenv: h.opts.Getenv}
	// Bounded by each server's start timeout; the task has no context yet.
	list, errs := h.mcp.Tools(context.Background(), servers, launch, ap)
	for _, err := range errs {
		g.Warn("MCP: " + h.Redactor().String(err.Error()))
	}
	return list
}

// mcpSecrets are the values of the servers' env and headers that look
// like secrets (by name, as redact.SecretName marks them, and every
// Authorization header): hidden from every sink like the API key.
func mcpSecrets(s Settings, getenv func(string) string) []string {
	var out []string
	for _, c := range s.MCPServers {
		c = c.Expanded(getenv)
		for k, v := range c.Env {
			if redact.SecretName(k) {
				out = append(out, v)
			}
		}
		for k, v := range c.Headers {
			if redact.SecretName(k) || strings.EqualFold(k, "Authorization") {
				out = append(out, v)
				if _, tok, ok := strings.Cut(v, " "); ok {
					out = append(out, tok)
				}
			}
		}
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
		key := filepath.Clean(root) + "\x00" + hex.EncodeToString(sum[:])
		h.mu.Lock()
		ok := h.mcpFiles[key]
		h.mu.Unlock()
		if ok || approvedAlways(root, hex.EncodeToString(sum[:])) {
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
	launch := mcp.Launch{Dir: root, Roots: ws.Roots(), Sandbox: s.Sandbox, SecretEnv: []string{s.APIKeyEnv},
		Commands: h.commands, Getenv: h.opts.Getenv}
	list, errs := h.mcp.Tools(ctx, servers, launch, nil)
	for _, err := range errs {
		h.logger().Warn("mcp server not listed", "error", h.Redactor().String(err.Error()))
	}
	return list
}
