package session

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentls/agentls/agent/permission"
	"strings"
	"sync"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Values of the review setting: which edits the user reviews before they
// apply.
const (
	ReviewOff         = "off"          // none: edits apply as the model makes them
	ReviewAlways      = "always"       // every edit
	ReviewOutsideOpen = "outside-open" // edits to files not open in the editor
)

// reviewRank orders the review values from the least review to the most:
// a later setting with a lower rank than the user's widens what the agent
// may do unreviewed (consent.go).
var reviewRank = map[string]int{"": 0, ReviewOff: 0, ReviewOutsideOpen: 1, ReviewAlways: 2}

// reviewEditor puts the user's review in front of the task's editor:
// edits the review setting covers are shown to the user before they apply,
// by the face's editor itself when it can (workspace.Reviewer: VS Code's
// refactor preview, a checkbox per hunk), otherwise by a question through
// the port per file (Keep / Reject) with the diff. What the user rejected
// comes back as a *workspace.RejectedError.
type reviewEditor struct {
	next workspace.Editor
	mode string
	ws   *workspace.Workspace
	port Port
	perm *permission.Service // asks (nil in tests: a service of its own)
	log  *reviewLog          // nil: not reported
	task func() (id, prompt string)
}

// reviewLog keeps what the user rejected in the task's reviews, for the
// report's "Rejected in review" section.
type reviewLog struct {
	mu    sync.Mutex // guards lines and brief
	lines []string
	brief []string // "1 of 2 changes in main.go", one per file with a rejection
}

func (l *reviewLog) add(e *workspace.RejectedError) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range e.Files {
		if len(f.Rejected) == 0 {
			continue
		}
		l.lines = append(l.lines, fmt.Sprintf("- %s: %d of %d changes rejected\n\n```diff\n%s```\n", f.Path, len(f.Rejected), len(f.Hunks), f.RejectedDiff()))
		l.brief = append(l.brief, fmt.Sprintf("%d of %d change%s in %s", len(f.Rejected), len(f.Hunks), plural(len(f.Hunks), "", "s"), f.Path))
	}
}

// note is " (you rejected 1 of 2 changes in main.go)" for the task's
// summary, or "" when the user rejected nothing: a summary that says a
// change is done must not hide the part the user refused.
func (l *reviewLog) note() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.brief) == 0 {
		return ""
	}
	return " (you rejected " + strings.Join(l.brief, "; ") + ")"
}

func (l *reviewLog) section() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return "\n## Rejected in review\n\n" + strings.Join(l.lines, "\n")
}

// reviewed reports whether the review setting covers fe.
func (e reviewEditor) reviewed(fe workspace.FileEdit) bool {
	switch e.mode {
	case ReviewAlways:
		return true
	case ReviewOutsideOpen:
		if fe.Create {
			return true
		}
		_, open := e.ws.Buffers().Get(e.ws.Abs(fe.Path))
		return !open
	}
	return false
}

// coversPath reports whether the review setting covers a write of rel (a
// workspace-relative path): the approval policy then leaves the question
// to the review, which shows the diff.
func (e reviewEditor) coversPath(rel string) bool {
	if e.mode != ReviewAlways && e.mode != ReviewOutsideOpen {
		return false
	}
	p, err := e.ws.Resolve(rel)
	if err != nil {
		return false
	}
	return e.reviewed(workspace.FileEdit{Path: p})
}

// Apply implements workspace.Editor.
func (e reviewEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	covered := false
	for _, fe := range edits {
		covered = covered || e.reviewed(fe)
	}
	if !covered {
		return e.next.Apply(ctx, label, edits)
	}
	err := workspace.ErrNoReview
	if r, ok := e.next.(workspace.Reviewer); ok {
		err = r.Review(ctx, label, edits)
	}
	if errors.Is(err, workspace.ErrNoReview) {
		err = e.ask(ctx, label, edits)
	}
	var rej *workspace.RejectedError
	if errors.As(err, &rej) {
		e.log.add(rej)
	}
	return err
}

// ask reviews edits file by file with the port's question (Keep or
// Reject, with the diff), then applies the files kept.
func (e reviewEditor) ask(ctx context.Context, label string, edits []workspace.FileEdit) error {
	id, prompt := "", ""
	if e.task != nil {
		id, prompt = e.task()
	}
	var kept []workspace.FileEdit
	var reviews []workspace.FileReview
	rejected := false
	reason := ""
	for _, fe := range edits {
		before := ""
		if !fe.Create {
			f, err := e.ws.ReadFile(ctx, fe.Path)
			if err != nil {
				return fmt.Errorf("review %s: %w", fe.Path, err)
			}
			before = f.Text
		}
		after, err := workspace.ApplyEdits(before, fe.Edits)
		if err != nil {
			return fmt.Errorf("review %s: %w", fe.Path, err)
		}
		hunks := workspace.DiffHunks(before, after)
		fr := workspace.FileReview{Path: fe.Path, Before: before, Hunks: hunks, After: after, Create: fe.Create}
		if !e.reviewed(fe) || len(hunks) == 0 {
			kept = append(kept, fe)
			reviews = append(reviews, fr)
			continue
		}
		what := "change"
		if len(hunks) > 1 {
			what = fmt.Sprintf("%d changes", len(hunks))
		}
		summary := fmt.Sprintf("apply %s to %s", what, fe.Path)
		if fe.Create {
			summary = "create " + fe.Path.String()
		}
		// The preview is fe as it applies below once kept.
		req := permission.Request{Kind: permission.KindReview, TaskID: id, Prompt: prompt, Tool: "review", Effects: tools.WritesFiles,
			Title: summary, Paths: []string{fe.Path.String()},
			Preview: []tools.FileChange{{Path: fe.Path.String(), Abs: e.ws.Abs(fe.Path), Before: before, After: after, Create: fe.Create}}}
		if c, ok := tools.CallFrom(ctx); ok {
			// The tool call that makes the edit: a face shows the question on it.
			req.CallID, req.Args = c.ID, c.Args
		}
		perm := e.perm
		if perm == nil {
			perm = permission.New(permission.NewStore(""))
		}
		d, err := perm.Ask(ctx, req, e.port)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || !d.Allows() {
			rejected = true
			if err != nil {
				reason = "the user could not be asked (" + err.Error() + ")"
			}
			fr.After = before
			for i := range hunks {
				fr.Rejected = append(fr.Rejected, i)
			}
			reviews = append(reviews, fr)
			continue
		}
		kept = append(kept, fe)
		reviews = append(reviews, fr)
	}
	if len(kept) > 0 {
		if err := e.next.Apply(ctx, label, kept); err != nil {
			return err
		}
	}
	if rejected {
		return &workspace.RejectedError{Files: reviews, Reason: reason}
	}
	return nil
}
