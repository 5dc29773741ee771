package tools

import (
	"context"
	"sync"

	"github.com/agentls/agentls/tools/shellpolicy"
)

// TaskApprovals wraps an Approver with the memory of one task: once the user
// answers AllowForTask or AllowAlways, similar calls of the same task are
// allowed without asking again. Similar means: for run_command, a command
// that the policy (shellpolicy's allowlist of safe commands) says is covered
// by the remembered prefix of the approved one (one simple command, a safe
// command whose further words pass its rule, same leading words: "go test"
// after "go test ./..."); a command that is not a safe command is
// remembered not at all. For a tool only its provider knows (an MCP
// server's, ApprovalRequest.PerTool), that tool only. For edit_file and
// write_file, any write. For a
// read of a secret file (ApprovalRequest.Secret), that file only: a write
// allowed for the task reads no secret, and a secret read allowed reads no
// other file. The agent makes one per task.
// Remembering AllowAlways beyond the task is the caller's business (the
// Approver it wraps).
type TaskApprovals struct {
	next   Approver
	policy *shellpolicy.Policy

	mu       sync.Mutex // guards writes, prefixes and secrets
	writes   bool
	prefixes []string
	secrets  map[string]bool // secret files the user let this task read
	perTool  map[string]bool // tools (ApprovalRequest.PerTool) allowed for this task
}

// NewTaskApprovals wraps next (which may not be nil) under policy (nil:
// the built-in allowlist, shellpolicy.Default).
func NewTaskApprovals(next Approver, policy *shellpolicy.Policy) *TaskApprovals {
	if policy == nil {
		policy = shellpolicy.Default()
	}
	return &TaskApprovals{next: next, policy: policy}
}

// Approve answers from the task's memory, or asks next and remembers a
// task-wide answer.
func (t *TaskApprovals) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	if t.remembered(req) {
		return AllowForTask, nil
	}
	d, err := t.next.Approve(ctx, req)
	if err != nil {
		return Deny, err
	}
	if d == AllowForTask || d == AllowAlways {
		t.mu.Lock()
		if req.PerTool {
			if t.perTool == nil {
				t.perTool = map[string]bool{}
			}
			t.perTool[req.Tool] = true
		} else if req.Secret {
			if t.secrets == nil {
				t.secrets = map[string]bool{}
			}
			t.secrets[req.Path] = true
		} else if req.Command == "" {
			t.writes = true
		} else if p := t.policy.Prefix(shellpolicy.Parse(req.Command)); p != "" {
			t.prefixes = append(t.prefixes, p)
		}
		t.mu.Unlock()
	}
	return d, nil
}

func (t *TaskApprovals) remembered(req ApprovalRequest) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if req.PerTool {
		return t.perTool[req.Tool]
	}
	if req.Secret {
		return t.secrets[req.Path]
	}
	if req.Command == "" {
		return t.writes
	}
	return t.policy.Covers(shellpolicy.Parse(req.Command), t.prefixes)
}

// CommandPrefix is the part of a command line an approval is remembered
// by under the built-in allowlist: the words of the safe-command entry it
// passes ("go test" for "go test ./..."), or "" when nothing may be
// remembered for it (not one simple command, or not a safe command).
func CommandPrefix(command string) string {
	return shellpolicy.Parse(command).Prefix()
}
