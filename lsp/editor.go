package lsp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/workspace"
)

// Editor is a workspace.Editor that changes files open in the editor with
// workspace/applyEdit (one request per Apply: one undoable change, with
// versioned documentChanges when the client takes them) and writes every
// other file, and every file of a client without applyEdit, to disk with
// the workspace's DiskEditor.
//
// An edit the client refuses (applied: false, e.g. the document's version
// moved on) is returned as an error wrapping workspace.ErrStale, so the
// model reads the file again and redoes the change; the user's text is
// never overwritten. After an applied edit, Apply waits (bounded) for the
// didChange that echoes it, so the next read sees the new text.
type Editor struct {
	svc  *Service
	ws   *workspace.Workspace
	sink *progressSink // the task's progress; nil outside a task (undo)
}

var _ workspace.Editor = (*Editor)(nil)

// Apply implements workspace.Editor: all files or none.
func (ed *Editor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	srv := ed.svc.srv
	apply, versioned := srv.SupportsApplyEdit()
	if !apply {
		return ed.ws.DiskEditor().Apply(ctx, label, edits)
	}
	open := 0
	for _, fe := range edits {
		if _, ok := srv.Buffers().Get(ed.ws.Abs(fe.Path)); ok && !fe.Create {
			open++
		}
	}
	switch {
	case open == 0:
		return ed.ws.DiskEditor().Apply(ctx, label, edits)
	case open < len(edits):
		return errors.New("one change touches files open in the editor and files that are not: change them one file at a time")
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	type planned struct {
		abs, newText string
		version      int32
	}
	var plans []planned
	we := protocol.WorkspaceEdit{}
	for _, fe := range edits {
		abs, doc, newText, err := ed.planned(fe)
		if err != nil {
			return err
		}
		plans = append(plans, planned{abs: abs, newText: newText, version: doc.Version})
		tes := make([]protocol.TextEdit, len(fe.Edits))
		for i, te := range fe.Edits {
			tes[i] = protocol.TextEdit{Range: protoRange(te.Range), NewText: te.NewText}
		}
		u := uri.File(abs)
		if versioned {
			elems := make([]protocol.TextDocumentEditElement, len(tes))
			for i := range tes {
				elems[i] = &tes[i]
			}
			v := doc.Version
			we.DocumentChanges = append(we.DocumentChanges, &protocol.TextDocumentEdit{
				TextDocument: protocol.OptionalVersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: &v},
				Edits:        elems,
			})
		} else {
			if we.Changes == nil {
				we.Changes = map[uri.URI][]protocol.TextEdit{}
			}
			we.Changes[u] = tes
		}
		ed.ws.ExpectEdit(fe.Path, newText, label)
	}

	changed := srv.DocumentChanged()
	res, err := ed.send(ctx, label, edits, we, "waiting for the editor to apply the edit to "+fileNames(edits))
	if err != nil {
		return err
	}
	if res == nil || !res.Applied {
		reason := "no reason given"
		if res != nil && res.FailureReason != nil {
			reason = *res.FailureReason
		}
		return fmt.Errorf("the editor refused the change (%s): %w", reason, workspace.ErrStale)
	}
	// Wait for the echo, so the task's next read sees its own edit.
	deadline := time.NewTimer(ed.svc.opts.EchoTimeout)
	defer deadline.Stop()
	for _, p := range plans {
		for {
			doc, ok := srv.Buffers().Get(p.abs)
			if !ok || doc.Text == p.newText || doc.Version != p.version {
				break
			}
			select {
			case <-changed:
				changed = srv.DocumentChanged()
			case <-deadline.C:
				srv.Logger().Warn("no didChange after an applied workspace/applyEdit", "file", p.abs, "waited", ed.svc.opts.EchoTimeout)
				return nil
			}
		}
	}
	return nil
}

// planned is what edit fe makes of the open buffer of its file: the
// file's absolute path, the buffer it applies to and the text after it. An
// edit made for another text or version of the buffer is an error wrapping
// workspace.ErrStale (the model reads the file again).
func (ed *Editor) planned(fe workspace.FileEdit) (abs string, doc workspace.Document, after string, err error) {
	abs = ed.ws.Abs(fe.Path)
	doc, _ = ed.svc.srv.Buffers().Get(abs)
	if (fe.BaseHash != "" && workspace.HashText(doc.Text) != fe.BaseHash) ||
		(fe.BaseHash == "" && fe.BaseVersion != 0 && doc.Version != fe.BaseVersion) {
		return "", doc, "", fmt.Errorf("%s (now at version %d): %w", fe.Path, doc.Version, workspace.ErrStale)
	}
	after, err = workspace.ApplyEdits(doc.Text, fe.Edits)
	if err != nil {
		return "", doc, "", fmt.Errorf("edit %s: %w", fe.Path, err)
	}
	return abs, doc, after, nil
}

// send sends we with workspace/applyEdit and waits for the answer; after
// ApplyNoticeAfter the task's progress says waiting.
//
// Once sent, the change is the editor's to answer (a user at Neovim's
// "Press ENTER", eglot's "Proceed? (y or n)" or VS Code's refactor preview
// may answer minutes later): the request is not tied to the task's context
// and has no time limit. The task waits for the answer; a cancel stops the
// wait, and an answer that still says applied joins the task's changes
// (workspace.PendingError).
func (ed *Editor) send(ctx context.Context, label string, edits []workspace.FileEdit, we protocol.WorkspaceEdit, activity string) (*protocol.ApplyWorkspaceEditResult, error) {
	srv := ed.svc.srv
	title := "agentls: " + label
	type answer struct {
		res *protocol.ApplyWorkspaceEditResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := srv.ApplyEdit(context.WithoutCancel(ctx), &protocol.ApplyWorkspaceEditParams{Label: &title, Edit: we})
		answered <- answer{res, err}
	}()
	var a answer
	notice := time.NewTimer(ed.svc.opts.ApplyNoticeAfter)
	defer notice.Stop()
	for waiting := true; waiting; {
		select {
		case a = <-answered:
			waiting = false
		case <-notice.C:
			ed.svc.log().Info("the editor has not answered an edit yet", "files", fileNames(edits), "after", ed.svc.opts.ApplyNoticeAfter)
			if ed.sink != nil {
				ed.sink.setActivity(activity)
			}
		case <-ctx.Done():
			late := make(chan bool, 1)
			go func() {
				a := <-answered
				late <- a.err == nil && a.res != nil && a.res.Applied
			}()
			paths := make([]workspace.Path, len(edits))
			for i, fe := range edits {
				paths[i] = fe.Path
			}
			return nil, workspace.NewPendingError(paths, late)
		}
	}
	if a.err != nil {
		return nil, fmt.Errorf("the editor did not apply the change (workspace/applyEdit: %v)", a.err)
	}
	return a.res, nil
}

// fileNames lists the files of edits for people: "main.go", "a.go and b.go".
func fileNames(edits []workspace.FileEdit) string {
	names := make([]string, len(edits))
	for i, fe := range edits {
		names[i] = fe.Path.String()
	}
	switch len(names) {
	case 1:
		return names[0]
	case 2:
		return names[0] + " and " + names[1]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func protoRange(r workspace.Range) protocol.Range {
	return protocol.Range{
		Start: protocol.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   protocol.Position{Line: r.End.Line, Character: r.End.Character},
	}
}
