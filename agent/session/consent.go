package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/tools/hooks"
	"github.com/agentls/agentls/tools/mcp"
)

// Settings from the client (initializationOptions and
// workspace/didChangeConfiguration) may come from a file of the
// workspace: VS Code's .vscode/settings.json for a setting not scoped to
// the user, Zed's .zed/settings.json, Helix's .helix/languages.toml,
// Neovim's exrc, a model that wrote one of them. So the baseline is the
// user's own settings (Options.User: environment, user settings file,
// agentls login, command line, built by package agent/settings), and
// settings that widen what the agent may do, or send the API key
// somewhere else, apply only once the user consents (confirmSettings).

// endpointOf is what a model endpoint is trusted by: where the key goes
// (the base URL's scheme, host and port; its path and user information
// do not move the key elsewhere) and which variable it comes from.
func endpointOf(s Settings) string {
	origin := RedactURL(s.BaseURL)
	if u, err := url.Parse(s.BaseURL); err == nil {
		origin = u.Scheme + "://" + u.Host
	}
	return origin + "|" + s.APIKeyEnv
}

// ErrModelNotTrusted is the error of a task whose settings send the API
// key to a model endpoint the user has not consented to.
type ErrModelNotTrusted struct {
	URL    string // the base URL, redacted
	Env    string // the variable the key would come from
	Reason string // why there was no consent
}

func (e *ErrModelNotTrusted) Error() string {
	return fmt.Sprintf("the editor's settings name the model service %s (key from %s), which your own settings do not, and %s: the API key is not sent there. "+
		"Set baseURL in your user settings file or OPENAI_BASE_URL, or allow it when asked", e.URL, e.Env, e.Reason)
}

var approvalRank = map[string]int{"deny": 0, "ask": 1, "auto": 2}

// widenings describes what s allows that base does not: a wider approval,
// more allowed or safe commands, more secret files read unasked, another
// check command, no sandbox, network for commands, less review before
// edits apply (a workspace file may turn review on, never off).
func widenings(base, s Settings) []string {
	var out []string
	if approvalRank[s.Approval] > approvalRank[base.Approval] {
		out = append(out, fmt.Sprintf("approval %q", s.Approval))
	}
	for _, c := range s.AllowCommands {
		if !slices.Contains(base.AllowCommands, c) {
			out = append(out, fmt.Sprintf("allowCommands %q", c))
		}
	}
	for _, c := range s.SafeCommands {
		if !slices.Contains(base.SafeCommands, c) {
			out = append(out, fmt.Sprintf("safeCommands %q", c))
		}
	}
	for _, g := range s.AllowSecretReads {
		if !slices.Contains(base.AllowSecretReads, g) {
			out = append(out, fmt.Sprintf("allowSecretReads %q", g))
		}
	}
	if s.CheckCommand != "" && s.CheckCommand != base.CheckCommand {
		out = append(out, fmt.Sprintf("checkCommand %q", s.CheckCommand))
	}
	if s.Sandbox == "off" && base.Sandbox != "off" {
		out = append(out, `sandbox "off"`)
	}
	out = append(out, s.CommandNetwork.widenings(base.CommandNetwork)...)
	if reviewRank[s.Review] < reviewRank[base.Review] {
		out = append(out, fmt.Sprintf("review %q", s.Review))
	}
	out = append(out, languageServerWidenings(base, s)...)
	for _, e := range newHooks(base, s) {
		out = append(out, fmt.Sprintf("a %s hook %q", e.Event, e.Command))
	}
	return append(out, mcpWidenings(base, s)...)
}

// newHooks are the hooks of s that base does not have: a hook runs a
// program, so a new one widens what happens.
func newHooks(base, s Settings) []hooks.Entry {
	known := hookKeys(base)
	var out []hooks.Entry
	for _, e := range s.Hooks.Entries() {
		if !known[e.Key()] {
			out = append(out, e)
		}
	}
	return out
}

func hookKeys(s Settings) map[string]bool {
	m := map[string]bool{}
	for _, e := range s.Hooks.Entries() {
		m[e.Key()] = true
	}
	return m
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

// narrowed is s with every field that widens base set back to base's.
func narrowed(base, s Settings) Settings {
	if approvalRank[s.Approval] > approvalRank[base.Approval] {
		s.Approval = base.Approval
	}
	s.AllowCommands = slices.DeleteFunc(slices.Clone(s.AllowCommands), func(c string) bool { return !slices.Contains(base.AllowCommands, c) })
	s.SafeCommands = slices.DeleteFunc(slices.Clone(s.SafeCommands), func(c string) bool { return !slices.Contains(base.SafeCommands, c) })
	s.AllowSecretReads = slices.DeleteFunc(slices.Clone(s.AllowSecretReads), func(g string) bool { return !slices.Contains(base.AllowSecretReads, g) })
	if s.CheckCommand != "" && s.CheckCommand != base.CheckCommand {
		s.CheckCommand = base.CheckCommand
	}
	if s.Sandbox == "off" && base.Sandbox != "off" {
		s.Sandbox = base.Sandbox
	}
	s.CommandNetwork = s.CommandNetwork.narrowed(base.CommandNetwork)
	if reviewRank[s.Review] < reviewRank[base.Review] {
		s.Review = base.Review
	}
	if len(newHooks(base, s)) > 0 {
		known := hookKeys(base)
		s.Hooks = s.Hooks.Only(func(e hooks.Entry) bool { return known[e.Key()] })
	}
	s.MCPServers = mcpNarrowed(base, s)
	return s
}

// settingsQuestion is the question about settings from the client: what
// they change, and how long a yes holds (an endpoint: always, remembered in
// the user's folder; the rest: until agentls restarts).
func settingsQuestion(what []string, newEndpoint bool) string {
	hold := " (a yes holds until agentls restarts)"
	if newEndpoint {
		hold = " (a yes to the model service is remembered in your configuration folder; the rest holds until agentls restarts)"
	}
	return "apply settings the editor sent that your own settings do not have (a repository's editor settings may have set them): " +
		strings.Join(what, "; ") + hold
}

// confirmSettings returns the settings a task may run with. Settings equal
// to or narrower than the ones the user started with (or consented to
// since) apply as they are. Otherwise the user is asked once through port:
// yes makes them the new baseline; no (or a face that cannot ask) runs the
// task with the widening fields set back, and refuses the task when the
// key would go to a model endpoint the user did not consent to. A
// loopback URL is asked about like any other: a hostile local listener is
// the same risk as a remote one. No key, no question about the endpoint.
func (h *Host) confirmSettings(ctx context.Context, s Settings, prompt string, port Port) (Settings, error) {
	h.mu.Lock()
	base := h.base
	h.mu.Unlock()
	ep := endpointOf(s)
	trusted, _, _ := h.perm.Store.Answer(permission.Session, "", permission.NSEndpoint, ep)
	newEndpoint := !trusted && s.APIKey(h.opts.Getenv) != ""
	if newEndpoint && h.opts.Endpoints != nil && h.opts.Endpoints.Confirmed(ep) {
		newEndpoint = false
	}
	wider := widenings(base, s)
	if !newEndpoint && len(wider) == 0 {
		return s, nil
	}
	shown := RedactURL(s.BaseURL)
	what := slices.Clone(wider)
	if newEndpoint {
		what = append(what, fmt.Sprintf("send your API key (from %s) to %s", s.APIKeyEnv, shown))
	}
	h.logger().Warn("settings changed since start-up widen what the agent may do: asking the user", "changes", what)
	var asker permission.Asker
	if port != nil {
		asker = port
	}
	// Asked every time the settings widen again; a yes trusts the
	// endpoint until agentls restarts.
	d, err := h.perm.Ask(ctx, permission.Request{
		Kind:   permission.KindSettings,
		TaskID: "(not started)",
		Prompt: prompt,
		Tool:   "settings",
		Title:  settingsQuestion(what, newEndpoint),
	}, asker)
	if err == nil && port != nil && d.Allows() {
		_ = h.perm.Store.Remember(permission.Session, "", permission.NSEndpoint, ep, true)
		h.mu.Lock()
		h.base = s
		h.mu.Unlock()
		if newEndpoint && h.opts.Endpoints != nil {
			if err := h.opts.Endpoints.Confirm(ep); err != nil {
				h.logger().Warn("the confirmed model endpoint is not remembered", "error", err)
			}
		}
		h.logger().Info("the user consented to the changed settings", "changes", what)
		return s, nil
	}
	reason := "you denied it"
	switch {
	case port == nil:
		reason = "this client cannot ask you"
	case err != nil:
		reason = "you could not be asked (" + err.Error() + ")"
	}
	if newEndpoint {
		return s, &ErrModelNotTrusted{URL: shown, Env: s.APIKeyEnv, Reason: reason}
	}
	h.logger().Warn("settings changed since start-up not applied: "+reason, "ignored", wider)
	return narrowed(base, s), nil
}
