// Package tools holds the tool contract and the agent's tools. A tool is
// described to the model by a name, a description and a JSON schema derived
// from its Go input type, and returns a Result with two faces: the text the
// model reads, and structured data for the editor and the validator.
//
// Two error channels: an error the model can fix (bad argument, no such file,
// no match) is a Result with IsError set and a message that says what to do
// instead; a Go error is for infrastructure failure only.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentls/agentls/workspace"
)

// Tool is one capability offered to the model.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON schema of the arguments object.
	Schema() json.RawMessage
	// ReadOnly tools may run in parallel and are offered to ask tasks.
	ReadOnly() bool
	// Effects says what the tool does beyond reading; 0 for a read-only
	// tool.
	Effects() Effect
	Run(ctx context.Context, args json.RawMessage) (Result, error)
	// Present describes a call with args (res: nil when it starts, its
	// result when it has ended); empty fields are filled by Describe with
	// a generic presentation.
	Present(args json.RawMessage, res *Result) Presentation
}

// Effect is what a tool does beyond reading the workspace. Behaviour around
// tools (saving the editor's buffers before a program runs, diagnostics
// after a write, hooks, review) attaches by effect, never by a tool's name,
// so tools from MCP servers and language servers get it too.
type Effect uint8

const (
	// WritesFiles: the tool changes workspace files, through the editor.
	WritesFiles Effect = 1 << iota
	// RunsProgram: the tool starts a program, which may read and change
	// whatever its sandbox allows (files on disk included).
	RunsProgram
	// External: the tool acts outside the workspace (an MCP server's tool):
	// what it does is known only to its server.
	External
)

// Has reports whether e includes every effect of f.
func (e Effect) Has(f Effect) bool { return e&f == f }

// Call identifies one tool call from the model to the editor: the model's
// call id (the ACP toolCallId, the key of approvals, hooks and reports),
// the tool and its raw arguments. The loop puts it in the context of the
// tool's Run (request-scoped data, like an HTTP request id), so whatever
// the tool asks or records carries it.
type Call struct {
	ID      string
	Tool    string
	Args    json.RawMessage
	Effects Effect // the tool's effects
	// Consent, when set, collects the secret files the user allowed this
	// call to send to the model (Approve records every allowed request
	// with Secret); the context gate lets a result quote a secret file
	// only when it is there.
	Consent *Consent
}

// Consent is the set of secret files (as printed, Path.String) the user
// allowed one call to read. A nil *Consent allows nothing.
type Consent struct {
	mu    sync.Mutex
	paths map[string]bool
}

// Allow records that p may reach the model.
func (c *Consent) Allow(p string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paths == nil {
		c.paths = map[string]bool{}
	}
	c.paths[p] = true
}

// Allowed reports whether the user allowed p.
func (c *Consent) Allowed(p string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[p]
}

type callKey struct{}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call ctx carries, if any.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// Result is what one tool call produced.
type Result struct {
	// CallID is the model's id of the call (Call.ID); set by the loop.
	CallID   string          `json:"callId,omitempty"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Text     string          `json:"text"` // what the model reads: rendered, never JSON-escaped
	IsError  bool            `json:"isError"`
	Evidence string          `json:"evidence,omitempty"` // for validation: e.g. the command and the tail of its output
	Files    []string        `json:"files,omitempty"`    // workspace-relative paths read or touched
	Changed  []string        `json:"changed,omitempty"`  // workspace-relative paths changed
	Duration time.Duration   `json:"duration"`
	// Data is structured output for the editor and the loop, e.g. a *Plan
	// from update_plan or a *CommandOutput from run_command.
	Data any `json:"data,omitempty"`
	// Present is how the call looks to people (Presentation), set by the
	// tool; the loop fills it for a tool that does not. Faces render it
	// and nothing else of a call's tool.
	Present *Presentation `json:"-"`
}

// Decision is the user's answer to an approval request.
type Decision int

const (
	Deny         Decision = iota
	AllowOnce             // this call only
	AllowForTask          // every similar call of this task
	AllowAlways           // remembered for the workspace (command prefix)
	// DenyAlways denies this call and, without asking, every similar one
	// of the conversation; the approval policy remembers it and answers
	// the tool Deny.
	DenyAlways
)

// Allows reports whether d lets the call go ahead.
func (d Decision) Allows() bool { return d == AllowOnce || d == AllowForTask || d == AllowAlways }

// ApprovalRequest asks the user whether a tool may do something.
type ApprovalRequest struct {
	// CallID and Args identify the tool call that asks (Call); filled from
	// the call's context when the tool leaves them empty.
	CallID string
	Args   json.RawMessage
	Tool   string // tool name
	// Effects are the asking tool's effects (filled from the call's
	// context when left 0): a request whose only effect is WritesFiles is
	// remembered as "writing files", any other by its tool.
	Effects Effect
	Summary string // one line for people: "run `go test ./...`", "write docs/x.md"
	Command string // for run_command: the command line; its prefix can be remembered
	Path    string // for writes and secret reads: the workspace-relative path
	// Secret marks a read of a file that commonly holds secrets
	// (SecretFile): asked even under approval "auto", remembered for the
	// task by path only.
	Secret bool
	// Preview is the change as it will be applied, computed by the tool
	// from the same plan (the workspace.FileEdit) it hands the editor
	// after a yes: what the user approves is what is written. Faces render
	// it; none recomputes it.
	Preview []FileChange
}

// FileChange is one file of a Preview: its whole text before and after.
type FileChange struct {
	Path   string // workspace-relative
	Abs    string // OS path
	Before string
	After  string
	Create bool
}

// PreviewOf is the change fe makes to a file whose text is now before:
// workspace.ApplyEdits of the very edits the editor will be handed. A tool
// asks with it, then applies fe unchanged.
func PreviewOf(ws *workspace.Workspace, before string, fe workspace.FileEdit) (FileChange, error) {
	after, err := workspace.ApplyEdits(before, fe.Edits)
	if err != nil {
		return FileChange{}, fmt.Errorf("preview %s: %w", fe.Path, err)
	}
	return FileChange{Path: fe.Path.String(), Abs: ws.Abs(fe.Path), Before: before, After: after, Create: fe.Create}, nil
}

// Approver asks the user for consent. The LSP layer implements it with
// window/showMessageRequest; the command line with a flag.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// PlanStatus is the state of one plan item.
type PlanStatus string

const (
	PlanPending    PlanStatus = "pending"
	PlanInProgress PlanStatus = "in_progress"
	PlanDone       PlanStatus = "done"
	PlanSkipped    PlanStatus = "skipped" // needs a Reason, e.g. "already satisfied"
)

// Mark is the item's checkbox as every view of a plan shows it (the model's
// tool results, editor progress, reports, the terminal): [x] done, [-]
// skipped, [>] in progress, [ ] pending.
func (s PlanStatus) Mark() string {
	switch s {
	case PlanDone:
		return "[x]"
	case PlanSkipped:
		return "[-]"
	case PlanInProgress:
		return "[>]"
	}
	return "[ ]"
}

// PlanItem is one line of the checklist.
type PlanItem struct {
	ID     string     `json:"id"`
	Text   string     `json:"text"`
	Status PlanStatus `json:"status"`
	Reason string     `json:"reason,omitempty"`
	// Files are the workspace files the step changes (or, in a plan task,
	// would change).
	Files []string `json:"files,omitempty"`
}

// Plan is the whole checklist, replaced by every update_plan call.
type Plan struct {
	Items []PlanItem `json:"items"`
}

// Open reports how many items are neither done nor skipped.
func (p *Plan) Open() int {
	n := 0
	for _, it := range p.Items {
		if it.Status != PlanDone && it.Status != PlanSkipped {
			n++
		}
	}
	return n
}
