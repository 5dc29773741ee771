package session

import (
	"context"
	"slices"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/shellpolicy"
)

// approvalPolicy is the one place a task's approval requests are decided:
// the rules of the user's settings and the memory of the user's answers.
// The guard in front of it only checks the task's state; the Port behind
// it only asks.
//
// In order: approval "deny" denies; a read of a file that commonly holds
// secrets is allowed unasked only when the user's allowSecretReads covers
// it (under "auto" too: the user decides, not the workspace); otherwise
// "auto" allows; then the task's memory; then a command that is a safe
// command (tools/shellpolicy, extended by the safeCommands setting)
// covered by a prefix the user allowed (the allowCommands setting, the
// "Always allow" answers kept in the user's configuration folder) is
// allowed; then the conversation's "reject always" answers deny; then the
// Port asks the user.
//
// Memory, by the user's answer, keyed per tool and per command prefix or
// path (request):
//   - once (AllowOnce): nothing is remembered;
//   - task (AllowForTask, AllowAlways): for the rest of the task, a command
//     covered by the safe prefix of the allowed one ("go test" after "go
//     test ./..."; a command that is not a safe command is remembered not
//     at all), a secret read of that file only (by any tool), a write of
//     files (a request whose only effect is WritesFiles) by any tool, and
//     any other request of the same tool (MCP, language servers);
//   - always (AllowAlways): a command's safe prefix, kept for the
//     workspace in the user's configuration folder (RememberCommand);
//   - deny (DenyAlways): a command by its safe prefix (a command without
//     one: every such command of the tool), any other request by its tool
//     and path, denied without asking for the rest of the conversation
//     (the task and its follow-ups).
type approvalPolicy struct {
	h        *Host // nil in tests: no warnings
	port     Port
	root     string // the workspace's primary root: the key of remembered prefixes
	stateDir string
	settings Settings
	shell    *shellpolicy.Policy
	task     func() (id, prompt string)
	denied   *denials          // shared with the conversation's other tasks
	refused  func(what string) // told of each refusal (for the task's summary); may be nil
	// reviewed reports whether the review setting covers a write of path
	// (workspace-relative); nil: no review.
	reviewed func(path string) bool

	mu       sync.Mutex      // guards the task memory below
	prefixes []string        // safe-command prefixes allowed for the task
	writes   bool            // file writes allowed for the task
	tools    map[string]bool // tools allowed for the task
	secrets  map[string]bool // secret files the task may read
}

// denials are the "reject always" answers of a conversation: a task and
// its follow-ups share them.
type denials struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (d *denials) has(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.keys[key]
}

func (d *denials) add(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.keys == nil {
		d.keys = map[string]bool{}
	}
	d.keys[key] = true
}

// Approve implements tools.Approver: decide, and note a refusal (a task
// that ends "completed" after one says so in its summary).
func (a *approvalPolicy) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	d, err := a.decide(ctx, req)
	if d == tools.Deny && a.refused != nil && ctx.Err() == nil {
		a.refused(req.Summary)
	}
	return d, err
}

func (a *approvalPolicy) decide(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	shell := a.shell
	if shell == nil {
		shell = shellpolicy.Default()
	}
	cmd := shellpolicy.Parse(req.Command)
	prefix := ""
	if req.Command != "" {
		prefix = shell.Prefix(cmd)
	}
	switch {
	case a.settings.Approval == "deny":
		return tools.Deny, nil
	case req.Secret && SecretReadAllowed(req.Path, a.settings.AllowSecretReads):
		return tools.AllowOnce, nil
	case req.Secret:
		// A file that commonly holds secrets is read only with the user's
		// consent, even under "auto".
	case onlyWrites(req) && req.Path != "" && a.reviewed != nil && a.reviewed(req.Path):
		// The review setting covers this write: the review question, with
		// the diff, asks before it applies (review.go), not this one.
		return tools.AllowOnce, nil
	case a.settings.Approval == "auto":
		return tools.AllowOnce, nil
	}
	if a.remembered(req, cmd, shell) {
		return tools.AllowForTask, nil
	}
	if req.Command != "" && !req.Secret {
		if a.h != nil {
			a.h.warnWorkspaceAllowCommands(a.stateDir)
		}
		remembered, err := RememberedCommands(a.root)
		if err != nil && a.h != nil {
			a.h.logger().Warn("remembered commands not read", "error", err)
		}
		if shell.Covers(cmd, slices.Concat(a.settings.AllowCommands, remembered)) {
			return tools.AllowOnce, nil
		}
	}
	if a.denied != nil && a.denied.has(denyKey(req, prefix)) {
		return tools.Deny, nil
	}
	always := prefix
	if perToolAlways(req) {
		// A tool only its server knows (an MCP server's): "always" is kept
		// by its exact name, like a command prefix (allowCommands too).
		always = req.Tool
		remembered, err := RememberedCommands(a.root)
		if err != nil && a.h != nil {
			a.h.logger().Warn("remembered commands not read", "error", err)
		}
		if slices.Contains(a.settings.AllowCommands, req.Tool) || slices.Contains(remembered, req.Tool) {
			return tools.AllowOnce, nil
		}
	}
	id, prompt := a.task()
	q := Question{TaskID: id, Prompt: prompt, Request: req, AlwaysPrefix: always}
	d, err := a.port.Ask(ctx, q)
	if err != nil {
		return tools.Deny, err
	}
	switch d {
	case tools.DenyAlways:
		if a.denied != nil {
			a.denied.add(denyKey(req, prefix))
		}
		return tools.Deny, nil
	case tools.AllowAlways:
		if always == "" {
			return tools.AllowOnce, nil
		}
		if err := RememberCommand(a.root, always); err != nil && a.h != nil {
			a.h.logger().Warn("cannot remember the allowed command", "prefix", always, "error", err)
		}
		a.remember(req, prefix)
	case tools.AllowForTask:
		a.remember(req, prefix)
	case tools.AllowOnce:
	default:
		return tools.Deny, nil
	}
	return d, nil
}

// perToolAlways reports whether "Always allow" for req is kept by its
// tool's name: a tool that acts outside the workspace (tools.External, an
// MCP server's), not a command, a write or a secret read.
func perToolAlways(req tools.ApprovalRequest) bool {
	return req.Command == "" && !req.Secret && req.Effects.Has(tools.External)
}

// denyKey is what a "reject always" answer to req is remembered by.
func denyKey(req tools.ApprovalRequest, prefix string) string {
	if prefix != "" {
		return req.Tool + "\x00" + prefix
	}
	return req.Tool + "\x00path:" + req.Path
}

// onlyWrites reports whether req asks for nothing but writing files.
func onlyWrites(req tools.ApprovalRequest) bool {
	return req.Command == "" && !req.Secret && req.Effects == tools.WritesFiles
}

func (a *approvalPolicy) remembered(req tools.ApprovalRequest, cmd shellpolicy.Command, shell *shellpolicy.Policy) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case req.Secret:
		return a.secrets[req.Path]
	case req.Command != "":
		return shell.Covers(cmd, a.prefixes)
	case onlyWrites(req):
		return a.writes
	}
	return a.tools[req.Tool]
}

// remember keeps a task-wide answer to req (prefix: the command's safe
// prefix, "" when none).
func (a *approvalPolicy) remember(req tools.ApprovalRequest, prefix string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case req.Secret:
		if a.secrets == nil {
			a.secrets = map[string]bool{}
		}
		a.secrets[req.Path] = true
	case req.Command != "":
		if prefix != "" {
			a.prefixes = append(a.prefixes, prefix)
		}
	case onlyWrites(req):
		a.writes = true
	default:
		if a.tools == nil {
			a.tools = map[string]bool{}
		}
		a.tools[req.Tool] = true
	}
}

// Policy is the safe-command allowlist of the settings: the built-in one
// and the user's safeCommands.
func (c Settings) Policy() (*shellpolicy.Policy, []error) {
	return shellpolicy.Default().With(c.SafeCommands)
}

// SecretReadAllowed reports whether one of the user's allowSecretReads
// globs (doublestar, workspace-relative: ".env.test", "config/*.pem")
// matches path, a secret file the agent wants to read.
func SecretReadAllowed(path string, globs []string) bool {
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, path); ok {
			return true
		}
	}
	return false
}

// CommandPrefix is what "Always allow" remembers of a command under the
// built-in allowlist: the words of the safe-command entry it passes ("go
// test" for "go test ./...", "ls" for "ls -la"), or "" (nothing is
// offered) when the command is not one simple command or not a safe
// command ("python3 --version", "go test -exec x").
func CommandPrefix(command string) string { return shellpolicy.Parse(command).Prefix() }

// CommandAllowed reports whether one of prefixes covers command under the
// built-in allowlist: it parses as one simple command of literal words
// (no list, pipe, substitution, redirection, control character...), is a
// safe command whose further words pass its entry's rule, and starts word
// by word with the prefix (tools/shellpolicy).
func CommandAllowed(command string, prefixes []string) bool {
	return shellpolicy.Covered(command, prefixes)
}
