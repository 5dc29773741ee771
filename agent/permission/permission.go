// Package permission is the one place agentls asks the user: every
// question (a tool call, a secret read, a settings change that widens
// trust, a workspace .mcp.json, a review's keep or reject, a rename) is a
// Request; one policy decides what the user's settings already answer
// (Decide), one Store keeps the answers the user chose to have remembered
// and for how long (Scope), and the face only renders the Request and
// returns the user's choice (Asker). "Why was this allowed?" has one
// answer: this package.
package permission

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/agentls/agentls/tools"
)

// Kind is what a Request asks about.
type Kind string

const (
	KindTool     Kind = "tool"     // a tool call: a command, a write, a rename, an MCP tool
	KindSettings Kind = "settings" // settings changed since start-up widen trust (hooks included)
	KindMCPFile  Kind = "mcp-file" // start a workspace .mcp.json's servers
	KindReview   Kind = "review"   // keep or reject a change (the review setting)
)

// Request is one question for the user, whole: what a face shows is
// read from here and nowhere else.
type Request struct {
	Kind Kind
	// CallID and Args are the tool call that asks (empty for a question
	// not asked by a call).
	CallID string
	Args   json.RawMessage
	// TaskID is the task that asks ("(not started)" before it starts);
	// Conversation the task and its follow-ups ("reject always" holds for
	// it; TaskID when empty); Prompt the task's prompt.
	TaskID       string
	Conversation string
	Prompt       string
	// Root is the workspace's primary root: the owner of Root answers.
	Root    string
	Tool    string
	Effects tools.Effect
	// Title is the one line a person reads: "run `go test ./...`".
	Title string
	// Command is the command line exactly as it will run; "" when none.
	Command string
	// Paths are the workspace-relative paths the request touches.
	Paths []string
	// Secret marks a read of a file that commonly holds secrets.
	Secret bool
	// Preview is each file's text before and after, as the tool will
	// apply it (computed by the tool from its own plan).
	Preview []tools.FileChange
	// Always is what "Always allow" would remember, as the face shows it
	// (a command prefix, a tool's name, ".mcp.json"); "" when "always" may
	// not be offered.
	Always string
	// NS and Key are what the answer is remembered by (Ask); Yes and No
	// the scopes a plain yes or no holds for (Once when zero).
	NS, Key string
	Yes, No Scope
}

// Path is the first of the request's paths, "" when none.
func (r Request) Path() string {
	if len(r.Paths) == 0 {
		return ""
	}
	return r.Paths[0]
}

// FromTool is the Request of a tool's approval request.
func FromTool(ar tools.ApprovalRequest) Request {
	r := Request{Kind: KindTool, CallID: ar.CallID, Args: ar.Args, Tool: ar.Tool, Effects: ar.Effects,
		Title: ar.Summary, Command: ar.Command, Secret: ar.Secret, Preview: ar.Preview}
	if ar.Path != "" {
		r.Paths = []string{ar.Path}
	}
	for _, c := range ar.Preview {
		if c.Path != ar.Path {
			r.Paths = append(r.Paths, c.Path)
		}
	}
	return r
}

// Asker is a face's side of a question: render the request, return the
// user's choice (tools.AllowOnce, AllowForTask, AllowAlways, Deny,
// DenyAlways). It is called by this package only (deps_test.go).
type Asker interface {
	AskUser(ctx context.Context, r Request) (tools.Decision, error)
}

// ErrNoAnswer is wrapped by an Asker's error when the question was put
// to the user and no answer came in time.
var ErrNoAnswer = errors.New("no answer")

// ErrNeverAnswers is the error of a question denied without asking: the
// face let a question go unanswered and had never answered one (some
// editors, ALE, never answer a server's questions), so every later one
// would wait the full time for nothing.
var ErrNeverAnswers = errors.New(`the editor did not answer an earlier approval question, so this is denied without asking ` +
	`(the user can set agentls.approval to "auto" or list commands in agentls.allowCommands)`)

// Silenced is implemented by an Asker that tells the user, once, that
// questions are denied unasked from now on (ErrNeverAnswers).
type Silenced interface {
	Silenced(ctx context.Context)
}

// Service asks the user through an Asker, in front of one Store.
type Service struct {
	Store *Store
	// Warn is told of an answer that could not be kept; nil: not told.
	Warn func(msg string, args ...any)

	// answered: a question was answered; silenced: one went unanswered
	// before any was, and nothing is asked any more.
	answered, silenced atomic.Bool
}

// askUser puts r to the user through a, unless the face has shown it
// never answers.
func (s *Service) askUser(ctx context.Context, r Request, a Asker) (tools.Decision, error) {
	if s.silenced.Load() {
		return tools.Deny, ErrNeverAnswers
	}
	d, err := a.AskUser(ctx, r)
	switch {
	case err == nil:
		s.answered.Store(true)
	case errors.Is(err, ErrNoAnswer) && ctx.Err() == nil && !s.answered.Load() && s.silenced.CompareAndSwap(false, true):
		if sl, ok := a.(Silenced); ok {
			sl.Silenced(ctx)
		}
	}
	return d, err
}

// New returns a service over store.
func New(store *Store) *Service { return &Service{Store: store} }

func (s *Service) warn(msg string, args ...any) {
	if s.Warn != nil {
		s.Warn(msg, args...)
	}
}

// Ask answers r from the answers remembered under r.NS and r.Key (the
// session's, then the root's, then always), else asks the user through
// a, and remembers the answer for the scope it holds: a plain yes for
// r.Yes, a plain no for r.No, "for this task" for the task, "always" for
// the root (when r.Always offers it), "reject always" for the
// conversation. A nil a (a face that cannot ask) is a no, not remembered.
func (s *Service) Ask(ctx context.Context, r Request, a Asker) (tools.Decision, error) {
	if r.NS != "" {
		if d, ok := s.recalled(r); ok {
			return d, nil
		}
	}
	if a == nil {
		return tools.Deny, nil
	}
	d, err := s.askUser(ctx, r, a)
	if err != nil {
		return tools.Deny, err
	}
	if d == tools.AllowAlways && r.Always == "" {
		d = tools.AllowOnce // "always" was not offered
	}
	if r.NS == "" {
		if d == tools.DenyAlways {
			d = tools.Deny
		}
		return d, nil
	}
	scope, allow := s.scopeOf(r, d)
	if err := s.Store.Remember(scope, s.owner(r, scope), r.NS, r.Key, allow); err != nil {
		s.warn("the answer is not remembered", "scope", scope.String(), "error", err)
	}
	if scope == Root {
		// Also for the rest of the session, should the file not be kept.
		_ = s.Store.Remember(Session, r.Root, r.NS, r.Key, true)
	}
	if d == tools.DenyAlways {
		d = tools.Deny
	}
	return d, nil
}

// scopeOf is the scope the answer d to r holds for.
func (s *Service) scopeOf(r Request, d tools.Decision) (Scope, bool) {
	switch d {
	case tools.AllowOnce:
		return r.Yes, true
	case tools.AllowForTask:
		return max(Task, r.Yes), true
	case tools.AllowAlways:
		return Root, true
	case tools.DenyAlways:
		return max(Task, r.No), false
	}
	return r.No, false
}

// owner is who a Request's answer at scope belongs to.
func (s *Service) owner(r Request, scope Scope) string {
	switch scope {
	case Task:
		if r.Conversation != "" {
			return r.Conversation
		}
		return r.TaskID
	case Root, Session:
		return r.Root
	}
	return ""
}

// recalled is the remembered answer to r, if any: a refusal first (of
// the conversation, then the session), then a yes from the narrowest
// scope out.
func (s *Service) recalled(r Request) (tools.Decision, bool) {
	for _, scope := range []Scope{Task, Session, Root, Always} {
		allow, found, err := s.Store.Answer(scope, s.owner(r, scope), r.NS, r.Key)
		if err != nil {
			s.warn("remembered answers not read", "scope", scope.String(), "error", err)
			continue
		}
		if found {
			if allow {
				return tools.AllowForTask, true
			}
			return tools.Deny, true
		}
	}
	return 0, false
}
