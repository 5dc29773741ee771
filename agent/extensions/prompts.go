package extensions

import (
	"log/slog"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/prompts"
	"github.com/agentls/agentls/agent/redact"
)

// promptTTL is how long Cached keeps a reading of the prompt files.
const promptTTL = 3 * time.Second

// Prompts are the custom commands (agent/prompts) of a workspace's roots
// and of the user, with the last reading kept for requests that must not
// walk folders each time. Its methods are safe for concurrent use.
type Prompts struct {
	log func() *slog.Logger

	mu   sync.Mutex // guards the fields below
	at   time.Time
	list []prompts.Prompt
}

// NewPrompts returns the custom commands of a host, logged to log (the
// host's current log; nil discards).
func NewPrompts(log func() *slog.Logger) *Prompts {
	if log == nil {
		discard := slog.New(slog.DiscardHandler)
		log = func() *slog.Logger { return discard }
	}
	return &Prompts{log: log}
}

// Read reads the custom commands of roots and the user, sorted by name.
// Files that could not be read are logged and left out.
func (p *Prompts) Read(roots []string) []prompts.Prompt {
	user, err := prompts.UserDir()
	if err != nil {
		p.log().Debug("no user prompt folder", "error", err)
	}
	ps, errs := prompts.Load(roots, user)
	for _, err := range errs {
		p.log().Warn("prompt file skipped", "error", err)
	}
	return ps
}

// Cached are the custom commands of roots as read at most promptTTL ago,
// for requests that must not walk folders each time (code actions).
func (p *Prompts) Cached(roots []string) []prompts.Prompt {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.list == nil || time.Since(p.at) > promptTTL {
		p.list, p.at = p.Read(roots), time.Now()
	}
	return p.list
}

// Expand turns a prompt "/name args" that names a custom command of roots
// into the command's prompt, with the arguments and the editor's
// selection substituted; the command's mode applies when the caller gave
// none. Any other prompt, and a resumed task's, is returned as it is (a
// slash that names no command is text for the model). A prompt file that
// is or links to a secret file (ctxgate, with r) is withheld.
func (p *Prompts) Expand(spec agent.TaskSpec, roots []string, r redact.Redactor) agent.TaskSpec {
	name, args, ok := prompts.Split(spec.Prompt)
	if !ok || spec.ResumeID != "" {
		return spec
	}
	c, ok := prompts.Find(p.Read(roots), name)
	if !ok {
		return spec
	}
	// The prompt file's text goes to the model: it passes the context
	// gate by its real target (.claude/commands/setup.md -> ../../.env).
	root := ""
	if len(roots) > 0 {
		root = roots[0]
	}
	if ctxgate.New(root, r).Secret(c.Source) {
		p.log().Warn("custom command withheld: its prompt file is or links to a secret file", "name", name, "source", c.Source)
		spec.Prompt = ctxgate.Withheld(c.Source) + "\nThe user ran the command /" + name + "; its prompt file was withheld. Tell the user, and do nothing else."
		return spec
	}
	spec.Prompt = c.Expand(args, spec.Context.Selection)
	if spec.Kind == "" && c.Mode != "" {
		spec.Kind = agent.Kind(c.Mode)
	}
	p.log().Info("custom command", "name", name, "source", c.Source)
	return spec
}
