package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aymanbagabas/go-udiff"

	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/workspace"
)

// UndoStore is what Undo needs of the session store; *store.Store satisfies it.
type UndoStore interface {
	TaskFiles(ctx context.Context, taskID string) ([]store.FileChange, error)
}

// FileRemover deletes files. An Editor that also implements it (e.g. the
// server's, with DeleteFile operations) deletes the files an undone task
// created; otherwise Undo deletes them on disk when the editor does not
// have them open.
type FileRemover interface {
	Remove(ctx context.Context, label string, paths []workspace.Path) error
}

// UndoFile is the outcome of undoing one file.
type UndoFile struct {
	Path string `json:"path"`
	// Action: "write" (reverted), "delete" (a file the task created was
	// removed), "none" (already as before the task), "conflict" (left alone).
	Action store.RevertAction `json:"action"`
	// Merged: the user changed the file after the task and the revert was
	// applied around the user's changes (three-way).
	Merged bool   `json:"merged,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Diff is, for a file not reverted, the revert that was not applied
	// (the task's text -> the text before the task); UserDiff is the user's
	// change since the task.
	Diff     string `json:"diff,omitempty"`
	UserDiff string `json:"userDiff,omitempty"`
}

// RevertDelete is the Action of a file the undo deleted: the task created
// it and nobody changed it since.
const RevertDelete = store.RevertDelete

// UndoReport says what undoing a task did, file by file.
type UndoReport struct {
	TaskID      string     `json:"taskId"`
	Reverted    []UndoFile `json:"reverted"`              // written back or deleted
	Unchanged   []UndoFile `json:"unchanged,omitempty"`   // already as before the task
	NotReverted []UndoFile `json:"notReverted,omitempty"` // left alone, with a diff each
}

// Undo reverts every edit task taskID made, from the session store, so it
// works after a restart and without git. Each file is checked against the
// text the task left (files reads it as the tools do: an open buffer first):
// an untouched file gets its text from before the task back; a file the user
// changed since is merged three-way (the revert applied around the user's
// changes) or, where the changes overlap, left alone and reported with a
// diff. Every file reverted goes through ONE ed.Apply (one
// workspace/applyEdit in the editor): all or none. Files the task created
// are deleted through ed when it is a FileRemover, else on disk.
func Undo(ctx context.Context, st UndoStore, taskID string, files Files, ed workspace.Editor) (*UndoReport, error) {
	if st == nil {
		return nil, fmt.Errorf("undo %s: %w", taskID, ErrNoStore)
	}
	if files == nil || ed == nil {
		return nil, fmt.Errorf("undo %s: no workspace or editor to revert the files with", taskID)
	}
	changes, err := st.TaskFiles(ctx, taskID)
	if err != nil {
		return nil, fmt.Errorf("undo %s: %w", taskID, err)
	}
	type current struct {
		p    workspace.Path
		f    *workspace.File // nil when the file does not exist
		rerr error
	}
	cur := map[string]*current{}
	read := func(path string) (string, bool, error) {
		p, err := files.Resolve(path)
		if err != nil {
			return "", false, err
		}
		c := &current{p: p}
		cur[path] = c
		f, err := files.ReadFile(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		c.f = f
		return f.Text, true, nil
	}
	plan, err := store.PlanUndo(taskID, changes, read)
	if err != nil {
		return nil, err
	}
	rep := &UndoReport{TaskID: taskID}
	label := "undo task " + taskID
	var edits []workspace.FileEdit
	var applied []UndoFile
	var remove []workspace.Path
	var removeFiles []UndoFile
	for _, fr := range plan.Files {
		uf := UndoFile{Path: fr.Path, Action: fr.Action, Merged: fr.Merged, Reason: fr.Reason, Diff: fr.Diff, UserDiff: fr.UserDiff}
		c := cur[fr.Path]
		switch fr.Action {
		case store.RevertNone:
			rep.Unchanged = append(rep.Unchanged, uf)
		case store.RevertConflict:
			rep.NotReverted = append(rep.NotReverted, uf)
		case store.RevertWrite:
			if c.f == nil {
				edits = append(edits, workspace.FileEdit{Path: c.p, Create: true, Edits: []workspace.TextEdit{{NewText: fr.Text}}})
			} else {
				edits = append(edits, workspace.FileEdit{Path: c.p, BaseHash: c.f.Hash, BaseVersion: c.f.Version,
					Edits: lineEdits(c.f.Text, fr.Text)})
			}
			applied = append(applied, uf)
		case store.RevertDelete:
			remove = append(remove, c.p)
			removeFiles = append(removeFiles, uf)
		}
	}
	if len(edits) > 0 {
		if err := ed.Apply(ctx, label, edits); err != nil {
			return nil, fmt.Errorf("undo %s: nothing was reverted: %w", taskID, err)
		}
		rep.Reverted = append(rep.Reverted, applied...)
	}
	if len(remove) == 0 {
		return rep, nil
	}
	if rm, ok := ed.(FileRemover); ok {
		if err := rm.Remove(ctx, label, remove); err != nil {
			for _, uf := range removeFiles {
				uf.Action, uf.Reason = store.RevertConflict, fmt.Sprintf("the task created this file; deleting it failed: %v", err)
				rep.NotReverted = append(rep.NotReverted, uf)
			}
			return rep, nil
		}
		rep.Reverted = append(rep.Reverted, removeFiles...)
		return rep, nil
	}
	for i, p := range remove {
		uf := removeFiles[i]
		if c := cur[uf.Path]; c.f != nil && c.f.FromBuffer {
			uf.Action, uf.Reason = store.RevertConflict, "the task created this file and it is open in the editor: close it and delete it"
			rep.NotReverted = append(rep.NotReverted, uf)
			continue
		}
		if err := os.Remove(filepath.Join(p.Root(), filepath.FromSlash(p.Rel()))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			uf.Action, uf.Reason = store.RevertConflict, fmt.Sprintf("the task created this file; deleting it failed: %v", err)
			rep.NotReverted = append(rep.NotReverted, uf)
			continue
		}
		rep.Reverted = append(rep.Reverted, uf)
	}
	return rep, nil
}

// lineEdits turns from into to with one text edit per changed run of lines,
// so the editor keeps cursors and folds outside them.
func lineEdits(from, to string) []workspace.TextEdit {
	var out []workspace.TextEdit
	for _, e := range udiff.Lines(from, to) {
		out = append(out, workspace.TextEdit{
			Range:   workspace.Range{Start: workspace.PositionOf(from, e.Start), End: workspace.PositionOf(from, e.End)},
			NewText: e.New,
		})
	}
	if len(out) == 0 {
		// Same lines but different bytes (should not happen): replace all.
		out = []workspace.TextEdit{{Range: workspace.Range{End: workspace.PositionOf(from, len(from))}, NewText: to}}
	}
	return out
}
