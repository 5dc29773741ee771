package permission

import (
	"context"
	"slices"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/shellpolicy"
)

// Rules are the user's settings a tool call's request is decided by.
type Rules struct {
	Approval         string   // "deny", "ask" or "auto"
	AllowCommands    []string // command prefixes (and MCP tool names) allowed unasked
	AllowSecretReads []string // doublestar globs of secret files read unasked
	Shell            *shellpolicy.Policy
	// Reviewed reports whether the review setting covers a write of path
	// (workspace-relative): the review question, with the diff, asks
	// before the write applies. nil: no review.
	Reviewed func(path string) bool
}

// Decide answers a tool call's request, in this order: approval "deny"
// denies; a read of a file that commonly holds secrets is allowed unasked
// only when the user's allowSecretReads covers it (under "auto" too: the
// user decides, not the workspace); a write the review setting covers is
// left to the review question; otherwise "auto" allows; then the task's
// remembered answers; then a command that is a safe command covered by a
// prefix the user allowed (allowCommands, answers kept for the root or
// always) is allowed, and an MCP tool the user allowed by name; then the
// conversation's "reject always" answers deny; then the user is asked
// through a.
//
// What an answer is remembered by, per tool and per command prefix or
// path:
//   - once (AllowOnce): nothing;
//   - task (AllowForTask, AllowAlways): for the rest of the task, a
//     command covered by the safe prefix of the allowed one ("go test"
//     after "go test ./..."; a command that is not a safe command: not at
//     all), a secret read of that file only (by any tool), a write of
//     files (a request whose only effect is WritesFiles) by any tool, and
//     any other request of the same tool (MCP, language servers);
//   - root (AllowAlways): a command's safe prefix, or an MCP tool's name,
//     kept for the workspace root on disk;
//   - deny (DenyAlways): a command by its safe prefix (a command without
//     one: every such command of the tool), any other request by its
//     tool and path, denied unasked for the rest of the conversation.
func (s *Service) Decide(ctx context.Context, r Request, rules Rules, a Asker) (tools.Decision, error) {
	shell := rules.Shell
	if shell == nil {
		shell = shellpolicy.Default()
	}
	cmd := shellpolicy.Parse(r.Command)
	prefix := ""
	if r.Command != "" {
		prefix = shell.Prefix(cmd)
	}
	switch {
	case rules.Approval == "deny":
		return tools.Deny, nil
	case r.Secret && SecretReadAllowed(r.Path(), rules.AllowSecretReads):
		return tools.AllowOnce, nil
	case r.Secret:
		// A file that commonly holds secrets is read only with the user's
		// consent, even under "auto".
	case onlyWrites(r) && r.Path() != "" && rules.Reviewed != nil && rules.Reviewed(r.Path()):
		// The review question, with the diff, asks before it applies.
		return tools.AllowOnce, nil
	case rules.Approval == "auto":
		return tools.AllowOnce, nil
	}
	task := r.TaskID
	conv := r.Conversation
	if conv == "" {
		conv = task
	}
	if s.rememberedForTask(task, r, cmd, shell) {
		return tools.AllowForTask, nil
	}
	if r.Command != "" && !r.Secret && shell.Covers(cmd, slices.Concat(rules.AllowCommands, s.kept(r.Root, NSCommand))) {
		return tools.AllowOnce, nil
	}
	if allow, found, _ := s.Store.Answer(Task, conv, NSDeny, denyKey(r, prefix)); found && !allow {
		return tools.Deny, nil
	}
	always, ns := prefix, NSCommand
	if perToolAlways(r) {
		// A tool only its server knows (an MCP server's): "always" is kept
		// by its exact name, like a command prefix (allowCommands too).
		always, ns = r.Tool, NSTool
		if slices.Contains(rules.AllowCommands, r.Tool) || slices.Contains(s.kept(r.Root, NSTool), r.Tool) ||
			slices.Contains(s.kept(r.Root, NSCommand), r.Tool) {
			return tools.AllowOnce, nil
		}
	}
	if r.Secret {
		always = ""
	}
	r.Always = always
	if a == nil {
		return tools.Deny, nil
	}
	d, err := s.askUser(ctx, r, a)
	if err != nil {
		return tools.Deny, err
	}
	switch d {
	case tools.DenyAlways:
		s.remember(Task, conv, NSDeny, denyKey(r, prefix), false)
		return tools.Deny, nil
	case tools.AllowAlways:
		if always == "" {
			return tools.AllowOnce, nil
		}
		s.remember(Root, r.Root, ns, always, true)
		s.rememberForTask(task, r, prefix)
	case tools.AllowForTask:
		s.rememberForTask(task, r, prefix)
	case tools.AllowOnce:
	default:
		return tools.Deny, nil
	}
	return d, nil
}

func (s *Service) remember(scope Scope, owner, ns, key string, allow bool) {
	if err := s.Store.Remember(scope, owner, ns, key, allow); err != nil {
		s.warn("the answer is not remembered", "scope", scope.String(), "key", key, "error", err)
	}
}

// kept are the keys of ns allowed for root and always.
func (s *Service) kept(root, ns string) []string {
	var out []string
	for _, scope := range []Scope{Root, Always} {
		if scope == Root && root == "" {
			continue
		}
		k, err := s.Store.Keys(scope, root, ns, true)
		if err != nil {
			s.warn("remembered answers not read", "scope", scope.String(), "error", err)
		}
		out = append(out, k...)
	}
	return out
}

func (s *Service) rememberedForTask(task string, r Request, cmd shellpolicy.Command, shell *shellpolicy.Policy) bool {
	switch {
	case r.Secret:
		allow, _, _ := s.Store.Answer(Task, task, NSSecret, r.Path())
		return allow
	case r.Command != "":
		prefixes, _ := s.Store.Keys(Task, task, NSCommand, true)
		return shell.Covers(cmd, prefixes)
	case onlyWrites(r):
		allow, _, _ := s.Store.Answer(Task, task, NSWrites, "")
		return allow
	}
	allow, _, _ := s.Store.Answer(Task, task, NSTool, r.Tool)
	return allow
}

func (s *Service) rememberForTask(task string, r Request, prefix string) {
	switch {
	case r.Secret:
		s.remember(Task, task, NSSecret, r.Path(), true)
	case r.Command != "":
		if prefix != "" {
			s.remember(Task, task, NSCommand, prefix, true)
		}
	case onlyWrites(r):
		s.remember(Task, task, NSWrites, "", true)
	default:
		s.remember(Task, task, NSTool, r.Tool, true)
	}
}

// perToolAlways reports whether "Always allow" for r is kept by its
// tool's name: a tool that acts outside the workspace (tools.External, an
// MCP server's), not a command, a write or a secret read.
func perToolAlways(r Request) bool {
	return r.Command == "" && !r.Secret && r.Effects.Has(tools.External)
}

// denyKey is what a "reject always" answer to r is remembered by.
func denyKey(r Request, prefix string) string {
	if prefix != "" {
		return r.Tool + "\x00" + prefix
	}
	return r.Tool + "\x00path:" + r.Path()
}

// onlyWrites reports whether r asks for nothing but writing files.
func onlyWrites(r Request) bool {
	return r.Command == "" && !r.Secret && r.Effects == tools.WritesFiles
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
