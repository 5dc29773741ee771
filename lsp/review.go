package lsp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/lsp/server"
	"github.com/agentls/agentls/workspace"
)

// reviewSettle is how long Review waits, after the editor's first
// didChange following a reviewed edit, for more didChange of the same
// edit (a client that applies the kept hunks one by one) before it reads
// what was kept.
const reviewSettle = 150 * time.Millisecond

var _ workspace.Reviewer = (*Editor)(nil)

// supportsReview reports whether the client can show an edit for review
// change by change: versioned documentChanges (the only place an
// AnnotatedTextEdit may go) and workspace.workspaceEdit.changeAnnotationSupport.
func supportsReview(s *server.Server) bool {
	apply, versioned := s.SupportsApplyEdit()
	c := s.ClientCapabilities()
	return apply && versioned && c.Workspace != nil && c.Workspace.WorkspaceEdit != nil &&
		c.Workspace.WorkspaceEdit.ChangeAnnotationSupport != nil
}

// Review implements workspace.Reviewer with one workspace/applyEdit whose
// every hunk is an AnnotatedTextEdit with its own change annotation
// (needsConfirmation: true), so the editor asks the user change by change
// (VS Code: the refactor preview, a checkbox per change) and applies what
// the user keeps. The answer and the didChange that follows tell what was
// kept: the buffer's text is compared with the hunks. Files not open in
// the editor, new files and clients without change annotations are left
// to the caller (ErrNoReview), which asks with the diff.
//
// The request, for main.go at version 4 with two hunks:
//
//	{"label": "agentls: edit_file main.go",
//	 "edit": {"documentChanges": [{"textDocument": {"uri": "file:///w/main.go", "version": 4},
//	   "edits": [{"range": ..., "newText": "...", "annotationId": "agentls/1/main.go#1"},
//	             {"range": ..., "newText": "...", "annotationId": "agentls/1/main.go#2"}]}],
//	  "changeAnnotations": {
//	   "agentls/1/main.go#1": {"label": "agentls: edit_file main.go", "needsConfirmation": true,
//	                           "description": "change 1 of 2, lines 3-4"}, ...}}}
func (ed *Editor) Review(ctx context.Context, label string, edits []workspace.FileEdit) error {
	srv := ed.svc.srv
	if !supportsReview(srv) {
		return fmt.Errorf("the client does not declare workspace.workspaceEdit.changeAnnotationSupport: %w", workspace.ErrNoReview)
	}
	for _, fe := range edits {
		if _, ok := srv.Buffers().Get(ed.ws.Abs(fe.Path)); !ok || fe.Create {
			return fmt.Errorf("%s is not open in the editor: %w", fe.Path, workspace.ErrNoReview)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	type planned struct {
		path          workspace.Path
		abs           string
		before, after string
		version       int32
		hunks         []workspace.Hunk
	}
	var plans []planned
	we := protocol.WorkspaceEdit{ChangeAnnotations: map[protocol.ChangeAnnotationIdentifier]protocol.ChangeAnnotation{}}
	seq := ed.svc.reviews.Add(1)
	confirm := true
	for _, fe := range edits {
		abs, doc, after, err := ed.planned(ctx, fe)
		if err != nil {
			return err
		}
		hunks := workspace.DiffHunks(doc.Text, after)
		if len(hunks) == 0 {
			continue
		}
		plans = append(plans, planned{path: fe.Path, abs: abs, before: doc.Text, after: after, version: doc.Version, hunks: hunks})
		elems := make([]protocol.TextDocumentEditElement, len(hunks))
		for i, h := range hunks {
			id := protocol.ChangeAnnotationIdentifier(fmt.Sprintf("agentls/%d/%s#%d", seq, fe.Path, i+1))
			elems[i] = &protocol.AnnotatedTextEdit{
				TextEdit:     protocol.TextEdit{Range: protoRange(h.Edit.Range), NewText: h.Edit.NewText},
				AnnotationID: id,
			}
			desc := fmt.Sprintf("change %d of %d, %s", i+1, len(hunks), hunkLines(h))
			we.ChangeAnnotations[id] = protocol.ChangeAnnotation{Label: "agentls: " + label, NeedsConfirmation: &confirm, Description: &desc}
		}
		v := doc.Version
		we.DocumentChanges = append(we.DocumentChanges, &protocol.TextDocumentEdit{
			TextDocument: protocol.OptionalVersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri.File(abs)}, Version: &v},
			Edits:        elems,
		})
		ed.ws.ExpectEdit(fe.Path, after, label)
	}
	if len(plans) == 0 {
		return nil
	}

	changed := srv.DocumentChanged()
	logSeq := ed.ws.Seq()
	waiting := "waiting for your review of the change to " + fileNames(edits)
	if ed.sink != nil {
		prev := ed.sink.swapActivity(waiting)
		defer ed.sink.setActivity(prev)
	}
	res, err := ed.send(ctx, label, edits, we, waiting)
	if err != nil {
		return err
	}
	if res == nil || !res.Applied {
		reason := ""
		if res != nil && res.FailureReason != nil {
			reason = *res.FailureReason
		}
		// A document that moved on is a stale edit, not the user's no.
		for _, p := range plans {
			if doc, ok := srv.Buffers().Get(p.abs); !ok || doc.Version != p.version {
				return fmt.Errorf("the editor refused the change (%s): %w", reason, workspace.ErrStale)
			}
		}
		rej := &workspace.RejectedError{Reason: reasonText(reason)}
		for _, p := range plans {
			fr, _ := workspace.NewFileReview(p.path, p.before, p.hunks, p.before)
			rej.Files = append(rej.Files, fr)
		}
		return rej
	}

	// Wait for the echo: the text the editor now holds is what the user
	// kept. Nothing kept (every change unchecked) may send no didChange at
	// all: the wait ends at EchoTimeout.
	deadline := time.NewTimer(ed.svc.opts.EchoTimeout)
	defer deadline.Stop()
	timedOut := false
	for _, p := range plans {
		var settle <-chan time.Time
	wait:
		for !timedOut {
			doc, ok := srv.Buffers().Get(p.abs)
			if !ok || doc.Text == p.after {
				break
			}
			if doc.Version != p.version && settle == nil {
				// It moved: give the client a moment to send the rest.
				settle = time.After(reviewSettle)
			}
			select {
			case <-changed:
				changed = srv.DocumentChanged()
				if settle != nil {
					settle = time.After(reviewSettle)
				}
			case <-settle:
				break wait
			case <-deadline.C:
				timedOut = true
			}
		}
	}

	rej := &workspace.RejectedError{}
	for _, p := range plans {
		doc, ok := srv.Buffers().Get(p.abs)
		if !ok {
			return fmt.Errorf("%s was closed during the review: read it again: %w", p.path, workspace.ErrStale)
		}
		fr, ok := workspace.NewFileReview(p.path, p.before, p.hunks, doc.Text)
		if !ok {
			return fmt.Errorf("%s changed in other ways during the review: %w", p.path, workspace.ErrStale)
		}
		rej.Files = append(rej.Files, fr)
		if len(fr.Rejected) > 0 {
			rej.Reason = "rejected in the editor's review"
		}
		if fr.Applied() {
			// What the user kept is the task's edit, not the user's typing
			// (a partial text, or one that came after ExpectEdit's time).
			ed.ws.ClaimEdit(p.path, logSeq, label)
		}
	}
	if rej.Reason == "" {
		return nil
	}
	return rej
}

// hunkLines names the lines a hunk changes, in the text before: "line 3",
// "lines 3-4", "after line 7".
func hunkLines(h workspace.Hunk) string {
	switch {
	case h.OldLines == 0:
		return fmt.Sprintf("insert after line %d", h.OldLine-1)
	case h.OldLines == 1:
		return fmt.Sprintf("line %d", h.OldLine)
	}
	return fmt.Sprintf("lines %d-%d", h.OldLine, h.OldLine+h.OldLines-1)
}

func reasonText(failure string) string {
	if strings.TrimSpace(failure) == "" {
		return "rejected in the editor's review"
	}
	return "the editor said: " + failure
}
