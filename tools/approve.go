package tools

import (
	"context"
	"strings"
	"sync"
)

// TaskApprovals wraps an Approver with the memory of one task: once the user
// answers AllowForTask or AllowAlways, similar calls of the same task are
// allowed without asking again. Similar means: for run_command, the same
// program (first word of the command); for edit_file and write_file, any
// write. The agent makes one per task. Remembering AllowAlways beyond the
// task is the caller's business (the Approver it wraps).
type TaskApprovals struct {
	next Approver

	mu      sync.Mutex // guards allowed
	allowed map[string]bool
}

// NewTaskApprovals wraps next (which may not be nil).
func NewTaskApprovals(next Approver) *TaskApprovals {
	return &TaskApprovals{next: next, allowed: map[string]bool{}}
}

// Approve answers from the task's memory, or asks next and remembers a
// task-wide answer.
func (t *TaskApprovals) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	key := similarKey(req)
	t.mu.Lock()
	ok := t.allowed[key]
	t.mu.Unlock()
	if ok {
		return AllowForTask, nil
	}
	d, err := t.next.Approve(ctx, req)
	if err != nil {
		return Deny, err
	}
	if d == AllowForTask || d == AllowAlways {
		t.mu.Lock()
		t.allowed[key] = true
		t.mu.Unlock()
	}
	return d, nil
}

// similarKey groups requests that one "allow for this task" covers.
func similarKey(req ApprovalRequest) string {
	if req.Command != "" {
		return "run:" + CommandPrefix(req.Command)
	}
	return "write"
}

// CommandPrefix is the part of a command line an approval is remembered
// by: its first word (the program), e.g. "go" for "go test ./...".
func CommandPrefix(command string) string {
	f := strings.Fields(command)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
