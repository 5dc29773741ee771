package session

import (
	"context"
	"time"

	"github.com/agentls/agentls/agent/completion"
	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/permission"
)

// trustedEndpoint reports whether the model endpoint of s is one the user
// set or consented to: the user's own settings' (trusted at start), one
// confirmed in a task's question, or remembered from an earlier one.
// Completion sends the open document as the user types, key or no key, so
// it never goes to an endpoint only the client's settings (which a
// repository may write) name.
func (h *Host) trustedEndpoint(s Settings) bool {
	ep := endpointOf(s)
	if ok, _, _ := h.perm.Store.Answer(permission.Session, "", permission.NSEndpoint, ep); ok {
		return true
	}
	return h.opts.Endpoints != nil && h.opts.Endpoints.Confirmed(ep)
}

// Completion is what inline completion needs from the host for one
// request: the model client of the current settings (the tasks' endpoint
// and key), the context gate of the workspace and its secrets, the
// exclusion rule of the workspace's file index, and the settings as the
// engine takes them. ok is false when completion is off.
func (h *Host) Completion(ctx context.Context) (cfg completion.Config, env completion.Env, ok bool, err error) {
	s := h.Settings()
	if !s.Completion.Enabled {
		return cfg, env, false, nil
	}
	ws, err := h.Workspace(ctx)
	if err != nil {
		return cfg, env, false, err
	}
	if !h.trustedEndpoint(s) {
		return cfg, env, false, &ErrModelNotTrusted{URL: RedactURL(s.BaseURL), Env: s.APIKeyEnv,
			Reason: "completion never asks: a task asks once, and completion follows"}
	}
	client, err := h.modelClient(s)
	if err != nil {
		return cfg, env, false, err
	}
	roots := ws.Roots()
	root := ""
	if len(roots) > 0 {
		root = roots[0]
	}
	cfg = completion.Config{
		Model:     s.Completion.Model,
		Timeout:   time.Duration(s.Completion.TimeoutMs) * time.Millisecond,
		MaxTokens: s.Completion.MaxTokens,
		Debounce:  time.Duration(s.Completion.DebounceMs) * time.Millisecond,
	}
	env = completion.Env{
		Model: client,
		Gate:  ctxgate.New(root, h.Redactor()),
		Excluded: func(name string) bool {
			p, err := ws.Resolve(name)
			return err != nil || !ws.Indexed(p)
		},
	}
	return cfg, env, true, nil
}
