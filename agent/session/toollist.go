package session

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/hooks"
	"github.com/agentls/agentls/tools/mcp"
)

// taskTools are the tools a task gets under settings s, before the host
// wraps them (toolSet), and what closes them when the task ends. Every
// source of tools adds its tools here, so the listing (ToolList) shows
// exactly what the model is given.
func (h *Host) taskTools(s Settings, forward func(context.Context, string, json.RawMessage) (json.RawMessage, error), env tools.Env) ([]tools.Tool, func()) {
	reg := tools.New(env)
	out := reg.Tools()
	if ls := h.opts.LanguageServers; ls != nil {
		for _, t := range ls.Tools(LanguageEnv{Workspace: env.Workspace, Editor: env.Editor, Approver: env.Approver, Settings: s, Forward: forward}) {
			out = append(out, sourced{Tool: t, source: "language-server"})
		}
	}
	return out, func() { _ = reg.Close() }
}

// sourced is a tool that says where it comes from (ToolInfo.Source).
type sourced struct {
	tools.Tool
	source string
}

func (t sourced) Source() string { return t.source }

// ToolInfo is one tool the model has, for agentls.tools and /tools.
type ToolInfo struct {
	Name string `json:"name"`
	// Source is where the tool comes from: "built-in", "mcp:<server>",
	// "language-server", or what the tool says (a Source method).
	Source string `json:"source"`
	// Description is the first line of the tool's description.
	Description string `json:"description"`
	ReadOnly    bool   `json:"readOnly"` // offered to ask and plan tasks too
	// Effects are what the tool does: "writes files", "runs programs",
	// "external".
	Effects []string `json:"effects,omitempty"`
}

// HookInfo is one configured hook, for agentls.tools and /tools.
type HookInfo struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Command string `json:"command"`
	Timeout string `json:"timeout"`
}

// ToolList is what the model of a new task would have: its tools, read
// from the same construction as a task's (taskTools), and the hooks of
// the settings a task would run with now.
type ToolList struct {
	Tools []ToolInfo `json:"tools"`
	Hooks []HookInfo `json:"hooks"`
}

// Tools lists the tools and hooks a task started now would have. Hooks
// that a change of the settings added and the user has not consented to
// are listed with "(needs your consent)" in their timeout's place.
func (h *Host) Tools(ctx context.Context) (*ToolList, error) {
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	s := h.Settings()
	h.syncMu.Lock()
	idx := h.index
	h.syncMu.Unlock()
	list, closeTools := h.taskTools(s, nil, tools.Env{Workspace: ws, Index: idx, Commands: h.commands,
		SecretEnv: []string{s.APIKeyEnv}, Sandbox: s.Sandbox, Network: s.CommandNetwork.All})
	defer closeTools()
	list = append(list, h.servers.Listed(ctx, s.MCPServers, ws.Roots()[0], func() mcp.Launch { return h.mcpLaunch(ws, s) })...)
	out := &ToolList{Tools: []ToolInfo{}, Hooks: []HookInfo{}}
	for _, t := range list {
		out.Tools = append(out.Tools, ToolInfo{Name: t.Name(), Source: sourceOf(t), Description: firstLine(t.Description()),
			ReadOnly: t.ReadOnly(), Effects: effectNames(t.Effects())})
	}
	h.mu.Lock()
	known := hookKeys(h.base)
	h.mu.Unlock()
	for _, e := range s.Hooks.Entries() {
		hi := HookInfo{Event: string(e.Event), Matcher: e.Matcher, Command: e.Command, Timeout: e.Timeout.String()}
		if !known[e.Key()] {
			hi.Timeout += " (added after start-up: runs only once you consent)"
		}
		out.Hooks = append(out.Hooks, hi)
	}
	return out, nil
}

// sourceOf names where a tool comes from.
func sourceOf(t tools.Tool) string {
	if s, ok := t.(interface{ Source() string }); ok && s.Source() != "" {
		return s.Source()
	}
	if rest, ok := strings.CutPrefix(t.Name(), "mcp__"); ok {
		server, _, _ := strings.Cut(rest, "__")
		return "mcp:" + server
	}
	return "built-in"
}

func effectNames(e tools.Effect) []string {
	var out []string
	for _, x := range []struct {
		bit  tools.Effect
		name string
	}{{tools.WritesFiles, "writes files"}, {tools.RunsProgram, "runs programs"}, {tools.External, "external"}} {
		if e.Has(x.bit) {
			out = append(out, x.name)
		}
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Markdown is the list for people: /tools in ACP, the pickers.
func (l *ToolList) Markdown() string {
	var b strings.Builder
	b.WriteString("## Tools the model has\n\n")
	for _, t := range l.Tools {
		access := "read-only"
		if !t.ReadOnly {
			access = strings.Join(t.Effects, ", ")
		}
		b.WriteString("- `" + t.Name + "` (" + t.Source + "; " + access + "): " + t.Description + "\n")
	}
	b.WriteString("\n## Hooks\n\n")
	if len(l.Hooks) == 0 {
		b.WriteString("None (the `hooks` setting is empty).\n")
	}
	for _, hk := range l.Hooks {
		m := ""
		if hk.Matcher != "" && hk.Event != string(hooks.Stop) && hk.Event != string(hooks.UserPromptSubmit) {
			m = " matching `" + hk.Matcher + "`"
		}
		b.WriteString("- " + hk.Event + m + ": `" + hk.Command + "` (timeout " + hk.Timeout + ")\n")
	}
	return b.String()
}
