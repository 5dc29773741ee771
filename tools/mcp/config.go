// Package mcp offers the tools of MCP servers to the agent, through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk). Servers are
// configured in Claude Code's .mcp.json shape; stdio servers start through
// the one launcher (tools.Run: sandbox, environment allowlist, no
// survivors) and are given its pipes as an IO transport; streamable HTTP
// (and legacy SSE) servers go through the SDK's transports. Their tools
// reach the model as mcp__<server>__<tool>, ask the user like commands do,
// and fail with a clear tool error, within a bounded time, when a server
// does not start, crashes or never answers.
package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// Source says who configured a server: what decides how far it is trusted.
type Source string

const (
	// FromSettings: the user's mcpServers setting.
	FromSettings Source = "settings"
	// FromWorkspace: a workspace's .mcp.json, used once the user approved
	// that file's servers.
	FromWorkspace Source = ".mcp.json"
	// FromClient: the ACP client's session/new mcpServers (the user's
	// editor configuration).
	FromClient Source = "acp"
)

// ServerConfig is one MCP server, in Claude Code's .mcp.json shape:
// {"command", "args", "env"} for stdio, {"type": "http", "url",
// "headers"} for streamable HTTP ("sse" for the legacy transport), plus
// agentls's own optional fields network, timeout and startTimeout.
type ServerConfig struct {
	Name    string            `json:"-"`
	Type    string            `json:"type,omitempty"` // "stdio" (default), "http", "sse"
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Network lets a stdio server's sandbox reach the network. nil: yes
	// for servers the user configured (settings, the ACP client), no for
	// a workspace's .mcp.json.
	Network *bool `json:"network,omitempty"`
	// Timeout bounds one tool call, in seconds (default 60).
	Timeout float64 `json:"timeout,omitempty"`
	// StartTimeout bounds starting the server and listing its tools, in
	// seconds (default 10).
	StartTimeout float64 `json:"startTimeout,omitempty"`

	Source Source `json:"-"`
}

// serverName is what a server name may hold: the tool names built from it
// must match the model APIs' ^[a-zA-Z0-9_-]{1,64}$.
var serverName = lazyregexp.New(`^[A-Za-z0-9_-]{1,32}$`)

// ParseServers reads servers in .mcp.json's shape: either the whole file
// ({"mcpServers": {...}}) or the map itself ({"name": {...}}), as the
// mcpServers setting holds it. They come back sorted by name, with src
// set; a server that cannot be used is an error naming it.
func ParseServers(raw []byte, src Source) ([]ServerConfig, error) {
	var file struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("mcp servers: %w", err)
	}
	entries := file.MCPServers
	if entries == nil {
		if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, fmt.Errorf("mcp servers: %w", err)
		}
	}
	var out []ServerConfig
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		var c ServerConfig
		if err := json.Unmarshal(entries[name], &c); err != nil {
			return nil, fmt.Errorf("mcp server %q: %w", name, err)
		}
		c.Name, c.Source = name, src
		if err := c.Check(); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Check reports what makes c unusable.
func (c ServerConfig) Check() error {
	if !serverName.MatchString(c.Name) {
		return fmt.Errorf("mcp server %q: a name is 1 to 32 letters, digits, '_' or '-' (it becomes part of the tool names mcp__%s__<tool>)", c.Name, c.Name)
	}
	switch c.Type {
	case "", "stdio":
		if c.Command == "" {
			return fmt.Errorf("mcp server %q: a stdio server needs a command", c.Name)
		}
	case "http", "sse":
		if c.URL == "" {
			return fmt.Errorf("mcp server %q: an %s server needs a url", c.Name, c.Type)
		}
	default:
		return fmt.Errorf("mcp server %q: unknown type %q (stdio, http or sse)", c.Name, c.Type)
	}
	return nil
}

// Stdio reports whether c is a server agentls starts.
func (c ServerConfig) Stdio() bool { return c.Type == "" || c.Type == "stdio" }

// NetworkAllowed is whether a stdio server's sandbox allows the network.
func (c ServerConfig) NetworkAllowed() bool {
	if c.Network != nil {
		return *c.Network
	}
	return c.Source != FromWorkspace
}

// key identifies a server's configuration: two tasks that configure the
// same server the same way share one process.
func (c ServerConfig) key() string {
	b, _ := json.Marshal(struct {
		N string
		C ServerConfig
		S Source
		V bool
	}{c.Name, c, c.Source, c.NetworkAllowed()})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Describe is c in one line for people (the consent question, the
// report): what it starts or where it connects, and the variables of the
// environment it reads; never the values of env or headers.
func (c ServerConfig) Describe() string {
	var b strings.Builder
	b.WriteString(c.Name + ": ")
	if c.Stdio() {
		b.WriteString(strings.Join(append([]string{c.Command}, c.Args...), " "))
		if len(c.Env) > 0 {
			fmt.Fprintf(&b, " (env %s)", strings.Join(slices.Sorted(maps.Keys(c.Env)), ", "))
		}
		if UserProgram(c) {
			b.WriteString(" as your own program (no sandbox)")
		} else if c.NetworkAllowed() {
			b.WriteString(" in the sandbox with network")
		} else {
			b.WriteString(" in the sandbox without network")
		}
	} else {
		fmt.Fprintf(&b, "%s %s", c.Type, c.URL)
		if len(c.Headers) > 0 {
			fmt.Fprintf(&b, " (headers %s)", strings.Join(slices.Sorted(maps.Keys(c.Headers)), ", "))
		}
	}
	if refs := c.Refs(); len(refs) > 0 {
		fmt.Fprintf(&b, "; reads ${%s} from agentls's environment", strings.Join(refs, "}, ${"))
	}
	return b.String()
}

// varRef matches ${NAME} and ${NAME:-default}, as Claude Code expands
// them in .mcp.json.
var varRef = lazyregexp.New(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// Refs are the environment variables c's values name, sorted.
func (c ServerConfig) Refs() []string {
	seen := map[string]bool{}
	for _, s := range c.strings() {
		for _, m := range varRef.FindAllStringSubmatch(s, -1) {
			seen[m[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func (c ServerConfig) strings() []string {
	out := append([]string{c.Command, c.URL}, c.Args...)
	for _, v := range c.Env {
		out = append(out, v)
	}
	for _, v := range c.Headers {
		out = append(out, v)
	}
	return out
}

// Expanded is c with ${NAME} and ${NAME:-default} replaced from getenv
// (nil: os.Getenv) in command, args, env, url and headers.
func (c ServerConfig) Expanded(getenv func(string) string) ServerConfig {
	if getenv == nil {
		getenv = os.Getenv
	}
	exp := func(s string) string {
		return varRef.ReplaceAllStringFunc(s, func(m string) string {
			sm := varRef.FindStringSubmatch(m)
			if v := getenv(sm[1]); v != "" {
				return v
			}
			return sm[2]
		})
	}
	c.Command, c.URL = exp(c.Command), exp(c.URL)
	c.Args = slices.Clone(c.Args)
	for i := range c.Args {
		c.Args[i] = exp(c.Args[i])
	}
	c.Env, c.Headers = expandMap(c.Env, exp), expandMap(c.Headers, exp)
	return c
}

func expandMap(m map[string]string, exp func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = exp(v)
	}
	return out
}
