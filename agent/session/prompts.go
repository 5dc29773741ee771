package session

import (
	"context"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/prompts"
	"github.com/agentls/agentls/workspace"
)

// Prompts are the custom commands of the workspace and the user
// (agent/prompts), sorted by name. Files that could not be read are
// logged and left out.
func (h *Host) Prompts(ctx context.Context) ([]prompts.Prompt, error) {
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	return h.readPrompts(ws), nil
}

func (h *Host) readPrompts(ws *workspace.Workspace) []prompts.Prompt {
	user, err := prompts.UserDir()
	if err != nil {
		h.logger().Debug("no user prompt folder", "error", err)
	}
	ps, errs := prompts.Load(ws.Roots(), user)
	for _, err := range errs {
		h.logger().Warn("prompt file skipped", "error", err)
	}
	return ps
}

// expandCommand turns a prompt "/name args" that names a custom command
// into the command's prompt, with the arguments and the editor's
// selection substituted; the command's mode applies when the caller gave
// none. Any other prompt is returned as it is (a slash that names no
// command is text for the model).
func (h *Host) expandCommand(ws *workspace.Workspace, spec agent.TaskSpec) agent.TaskSpec {
	name, args, ok := prompts.Split(spec.Prompt)
	if !ok || spec.ResumeID != "" {
		return spec
	}
	p, ok := prompts.Find(h.readPrompts(ws), name)
	if !ok {
		return spec
	}
	// The prompt file's text goes to the model: it passes the context
	// gate by its real target (.claude/commands/setup.md -> ../../.env).
	root := ""
	if rs := ws.Roots(); len(rs) > 0 {
		root = rs[0]
	}
	if ctxgate.New(root, h.Redactor()).Secret(p.Source) {
		h.logger().Warn("custom command withheld: its prompt file is or links to a secret file", "name", name, "source", p.Source)
		spec.Prompt = ctxgate.Withheld(p.Source) + "\nThe user ran the command /" + name + "; its prompt file was withheld. Tell the user, and do nothing else."
		return spec
	}
	spec.Prompt = p.Expand(args, spec.Context.Selection)
	if spec.Kind == "" && p.Mode != "" {
		spec.Kind = agent.Kind(p.Mode)
	}
	h.logger().Info("custom command", "name", name, "source", p.Source)
	return spec
}

// promptTTL is how long CachedPrompts keeps a reading of the prompt files.
const promptTTL = 3 * time.Second

// promptCache is the last reading of the prompt files.
type promptCache struct {
	mu   sync.Mutex // guards the fields below
	at   time.Time
	list []prompts.Prompt
}

// CachedPrompts are the custom commands as read at most promptTTL ago,
// for requests that must not walk folders each time (code actions); nil
// before the workspace is built.
func (h *Host) CachedPrompts() []prompts.Prompt {
	h.syncMu.Lock()
	ws := h.ws
	h.syncMu.Unlock()
	if ws == nil {
		return nil
	}
	c := &h.prompts
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.list == nil || time.Since(c.at) > promptTTL {
		c.list, c.at = h.readPrompts(ws), time.Now()
	}
	return c.list
}
