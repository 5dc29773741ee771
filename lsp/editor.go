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

// Editor is a workspace.Editor for the LSP face. A change is planned once
// (workspace.Plan: every file checked by the one staleness rule) and
// applied as one workspace/applyEdit when the editor holds any of its
// files: versioned documentChanges for open and closed files alike (a
// buffer's version, null for a file the editor does not have open, which
// every editor applies by loading it), so a rename whose declaring file
// is open and whose callers are not is one undoable change. A change that
// touches no open file, and every change of a client without applyEdit,
// is written to disk with the workspace's DiskEditor. A new file is
// created on disk after the editor applied the rest.
//
// An edit the client refuses (applied: false, e.g. the document's version
// moved on) is returned as an error wrapping workspace.ErrStale, so the
// model reads the file again and redoes the change; the user's text is
// never overwritten. After an applied edit, Apply waits (bounded) for the
// didChange that echoes it, so the next read sees the new text; the files
// the editor loaded for the edit are then saved by it
// (agentls/saveDocuments) when it can, else by agentls, so the change is
// on disk and not left in hidden modified buffers.
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
	plan, err := ed.ws.Plan(ctx, edits)
	if err != nil {
		return err
	}
	if !plan.Open() {
		return ed.ws.DiskEditor().Apply(ctx, label, edits)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var creates []workspace.FileEdit
	var sent []workspace.PlannedFile
	we := protocol.WorkspaceEdit{}
	for _, pf := range plan.Files {
		if pf.Edit.Create {
			creates = append(creates, pf.Edit)
			continue
		}
		sent = append(sent, pf)
		tes := make([]protocol.TextEdit, len(pf.Edits))
		for i, te := range pf.Edits {
			tes[i] = protocol.TextEdit{Range: protoRange(te.Range), NewText: te.NewText}
		}
		u := uri.File(pf.Abs)
		if versioned {
			elems := make([]protocol.TextDocumentEditElement, len(tes))
			for i := range tes {
				elems[i] = &tes[i]
			}
			var version *int32 // null: not open, the file on disk is the truth
			if pf.Open {
				v := pf.Version
				version = &v
			}
			we.DocumentChanges = append(we.DocumentChanges, &protocol.TextDocumentEdit{
				TextDocument: protocol.OptionalVersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: version},
				Edits:        elems,
			})
		} else {
			if we.Changes == nil {
				we.Changes = map[uri.URI][]protocol.TextEdit{}
			}
			we.Changes[u] = tes
		}
		ed.ws.ExpectEdit(pf.Edit.Path, pf.After, label)
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
	ed.settle(ctx, label, sent, changed)
	if len(creates) > 0 {
		if err := ed.ws.DiskEditor().Apply(ctx, label, creates); err != nil {
			return fmt.Errorf("the files open in the editor were changed, the new files were not created: %w", err)
		}
	}
	return nil
}

// settle waits (bounded by EchoTimeout) for the didChange that echoes an
// applied edit in every file the editor holds, so the task's next read
// sees its own edit, then asks the editor to save the files it loaded for
// the edit (they were closed before it, or loaded for an earlier one).
func (ed *Editor) settle(ctx context.Context, label string, sent []workspace.PlannedFile, changed <-chan struct{}) {
	srv := ed.svc.srv
	deadline := time.NewTimer(ed.svc.opts.EchoTimeout)
	defer deadline.Stop()
	waited := false
	var loaded []workspace.PlannedFile
	for _, pf := range sent {
		if !pf.Open || ed.loadedEarlier(pf) {
			loaded = append(loaded, pf)
		}
		for !waited {
			doc, ok := srv.Buffers().Get(pf.Abs)
			if pf.Open && (!ok || doc.Text == pf.After || doc.Version != pf.Version) {
				break
			}
			if !pf.Open && (!ok || doc.Text == pf.After) {
				// A closed file the editor loaded and told us about, or
				// one it holds without telling (nothing to wait for).
				break
			}
			select {
			case <-changed:
				changed = srv.DocumentChanged()
			case <-deadline.C:
				srv.Logger().Warn("no didChange after an applied workspace/applyEdit", "file", pf.Abs, "waited", ed.svc.opts.EchoTimeout)
				waited = true
			}
		}
	}
	if len(loaded) > 0 {
		ed.saveLoaded(ctx, label, loaded)
	}
}

// loadedEarlier reports whether pf is open only because the editor loaded
// it for an earlier edit (a rename's caller, kept in a hidden buffer) and
// its buffer still matches the disk: like a closed file, its change goes
// to disk, so the undo of a rename reverts the disk too and the disk never
// holds half a change. A buffer that differs from the disk (the user's
// unsaved text) is the user's to save.
func (ed *Editor) loadedEarlier(pf workspace.PlannedFile) bool {
	if _, ok := ed.svc.editLoaded.Load(pf.Abs); !ok || pf.Edit.BaseHash == "" {
		return false
	}
	disk, err := ed.ws.ReadDisk(pf.Edit.Path)
	return err == nil && disk.Hash == pf.Edit.BaseHash
}

// saveLoaded asks the editor to save the files it loaded to apply an edit
// (agentls/saveDocuments): the change then is on disk, where the language
// servers and commands read it, and no hidden buffer is left modified. A
// file the editor does not save (a client without the request, a failed
// save) is written by agentls: the buffer's text when the editor told us
// of it (workspace.SaveBuffer, only while the disk still holds the text the
// edit was planned on), else the planned edit on disk (its base is the
// disk's text).
func (ed *Editor) saveLoaded(ctx context.Context, label string, loaded []workspace.PlannedFile) {
	ctx = context.WithoutCancel(ctx)
	params := saveDocumentsParams{}
	for _, pf := range loaded {
		params.URIs = append(params.URIs, string(uri.File(pf.Abs)))
	}
	unsaved := map[string]bool{}
	res, err := SaveDocumentsRequest.ask(ctx, ed.svc, params, ed.svc.opts.SaveTimeout, &ed.svc.saveDocs)
	if err != nil {
		if !errors.Is(err, errNotAnswered) {
			ed.svc.log().Warn("the editor did not save the files it loaded for an edit", "error", err)
		} else {
			ed.svc.log().Info("the editor does not answer agentls/saveDocuments: agentls writes the files it loaded for an edit", "files", len(loaded))
		}
		for _, u := range params.URIs {
			unsaved[u] = true
		}
	} else {
		for _, f := range res.Failed {
			ed.svc.log().Warn("the editor did not save a file it loaded for an edit", "uri", f.URI, "reason", f.Reason)
			unsaved[f.URI] = true
		}
	}
	for _, pf := range loaded {
		ed.svc.editLoaded.Store(pf.Abs, struct{}{})
		if !unsaved[string(uri.File(pf.Abs))] {
			continue
		}
		var err error
		if doc, ok := ed.svc.srv.Buffers().Get(pf.Abs); ok && doc.Text == pf.After {
			err = ed.ws.SaveBuffer(ctx, pf.Edit.Path, pf.Edit.BaseHash)
		} else if !ok {
			err = ed.ws.DiskEditor().Apply(ctx, label, []workspace.FileEdit{pf.Edit})
		}
		if err != nil {
			ed.svc.log().Warn("a file the editor loaded for an edit was not written", "file", pf.Abs, "error", err)
		}
	}
}

// planned is what edit fe makes of the open buffer of its file: the
// file's absolute path, the buffer it applies to and the text after, from
// the workspace's plan (one staleness rule: workspace.CheckBase).
func (ed *Editor) planned(ctx context.Context, fe workspace.FileEdit) (abs string, doc workspace.Document, after string, err error) {
	pf, err := ed.ws.PlanFile(ctx, fe)
	if err != nil {
		return "", doc, "", err
	}
	doc, _ = ed.svc.srv.Buffers().Get(pf.Abs)
	if !pf.Open {
		// The plan read the disk: the clean buffer is behind it.
		return "", doc, "", fmt.Errorf("%s changed on disk under the editor's buffer: %w", fe.Path, workspace.ErrStale)
	}
	return pf.Abs, doc, pf.After, nil
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
