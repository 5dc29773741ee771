package session

import (
	"context"
	"sync"

	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/shellpolicy"
)

// approvalPolicy is a task's tools.Approver: it hands each request, with
// the task's rules (the user's settings), to the permission service
// (agent/permission), which decides, remembers and asks the Port. The
// guard in front of it only checks the task's state.
type approvalPolicy struct {
	h        *Host // nil in tests: no warnings
	perm     *permission.Service
	port     Port
	root     string // the workspace's primary root: the owner of answers kept for it
	stateDir string
	settings Settings
	shell    *shellpolicy.Policy
	// conv is the conversation (the task and its follow-ups) "reject
	// always" answers hold for; "" the task alone.
	conv    string
	task    func() (id, prompt string)
	refused func(what string) // told of each refusal (for the task's summary); may be nil
	// reviewed reports whether the review setting covers a write of path
	// (workspace-relative); nil: no review.
	reviewed func(path string) bool

	once sync.Once // sets perm when the host gave none (tests)
}

// Approve implements tools.Approver: decide, and note a refusal (a task
// that ends "completed" after one says so in its summary).
func (a *approvalPolicy) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	if req.Command != "" && !req.Secret && a.h != nil {
		a.h.warnWorkspaceAllowCommands(a.stateDir)
	}
	r := permission.FromTool(req)
	r.TaskID, r.Prompt = a.task()
	r.Conversation, r.Root = a.conv, a.root
	a.once.Do(func() {
		if a.perm == nil {
			a.perm = permission.New(permission.NewStore(""))
		}
	})
	d, err := a.perm.Decide(ctx, r, permission.Rules{Approval: a.settings.Approval, AllowCommands: a.settings.AllowCommands,
		AllowSecretReads: a.settings.AllowSecretReads, Shell: a.shell, Reviewed: a.reviewed}, a.port)
	if d == tools.Deny && a.refused != nil && ctx.Err() == nil {
		a.refused(req.Summary)
	}
	return d, err
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
	return permission.SecretReadAllowed(path, globs)
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
