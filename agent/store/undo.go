package store

import (
	"fmt"
	"sort"

	udiff "github.com/aymanbagabas/go-udiff"
)

// FileChange is what one task did to one file, folded over all its edits.
type FileChange struct {
	Path    string // workspace-relative
	Before  string // the text before the task's first edit of the file
	After   string // the text after the task's last edit of the file
	Created bool   // the file did not exist before the task
	Deleted bool   // the task's last edit removed the file
	Edits   int    // how many edits the task made to the file
}

// RevertAction is what undoing a task does to one file.
type RevertAction string

const (
	// RevertNone: the file already has the text it had before the task.
	RevertNone RevertAction = "none"
	// RevertWrite: write Text to the file (the file exists, or is recreated).
	RevertWrite RevertAction = "write"
	// RevertDelete: the task created the file and nobody changed it since: delete it.
	RevertDelete RevertAction = "delete"
	// RevertConflict: the user changed the file where the task did; it is
	// left alone and Diff shows what undo would have reverted.
	RevertConflict RevertAction = "conflict"
)

// FileRevert is the undo decision for one file.
type FileRevert struct {
	Path   string
	Action RevertAction
	// Text is the file's new content for RevertWrite.
	Text string
	// Merged is set when the user changed the file after the task and the
	// revert was merged around the user's changes (three-way).
	Merged bool
	// Reason says, for people, why a file is RevertConflict or RevertNone.
	Reason string
	// Diff, for RevertConflict, is the unified diff of the revert the undo
	// could not apply (the task's text -> the text before the task), so the
	// user can apply what they want by hand. UserDiff is the user's change
	// since the task (the task's text -> the current text).
	Diff     string
	UserDiff string
}

// RevertFile decides how to undo one file's change given the file's current
// text (exists false when the file is missing). It never clobbers a change
// the user made after the task:
//   - unchanged since the task: revert to the text before the task (or delete
//     a file the task created, or recreate one it deleted);
//   - changed by the user: three-way merge at line granularity with the
//     task's text as base, the current text as ours and the text before the
//     task as theirs; the revert applies where the user's changes do not
//     touch the task's hunks, otherwise the file is a conflict with a diff.
func RevertFile(fc FileChange, current string, exists bool) FileRevert {
	r := FileRevert{Path: fc.Path}
	taskExists := !fc.Deleted
	beforeExists := !fc.Created

	switch {
	case !exists && !beforeExists:
		r.Action, r.Reason = RevertNone, "the file the task created no longer exists"
		return r
	case !exists && !taskExists:
		r.Action, r.Text = RevertWrite, fc.Before // recreate the file the task deleted
		return r
	case !exists:
		r.Action, r.Reason = RevertConflict, "the file was deleted after the task"
		r.Diff = unified(fc.Path, fc.After, fc.Before)
		return r
	case !taskExists:
		// The task deleted the file and someone recreated it since.
		if beforeExists && current == fc.Before {
			r.Action, r.Reason = RevertNone, "the file already has its text from before the task"
			return r
		}
		r.Action, r.Reason = RevertConflict, "the task deleted this file and it was created again after the task"
		r.Diff = unified(fc.Path, "", fc.Before)
		r.UserDiff = unified(fc.Path, "", current)
		return r
	}

	// The file exists now and existed after the task.
	if current == fc.After {
		if !beforeExists {
			r.Action = RevertDelete
			return r
		}
		if fc.Before == fc.After {
			r.Action, r.Reason = RevertNone, "the task left the file as it found it"
			return r
		}
		r.Action, r.Text = RevertWrite, fc.Before
		return r
	}
	if beforeExists && current == fc.Before {
		r.Action, r.Reason = RevertNone, "the file already has its text from before the task"
		return r
	}
	if !beforeExists {
		r.Action, r.Reason = RevertConflict, "the task created this file and it was changed after the task"
		r.Diff = unified(fc.Path, fc.After, "")
		r.UserDiff = unified(fc.Path, fc.After, current)
		return r
	}
	merged, ok := Merge3(fc.After, current, fc.Before)
	if !ok {
		r.Action, r.Reason = RevertConflict, "the file was changed after the task in the lines the task changed"
		r.Diff = unified(fc.Path, fc.After, fc.Before)
		r.UserDiff = unified(fc.Path, fc.After, current)
		return r
	}
	r.Action, r.Text, r.Merged = RevertWrite, merged, true
	return r
}

// Merge3 merges, line by line, the changes from base to ours and from base to
// theirs. It fails (ok false) when a change of ours and a change of theirs
// overlap or touch (are adjacent, or insert at the same place), unless they
// are the same change. Adjacent changes count as conflicts on purpose: an
// undo must not guess how two edits of neighbouring lines combine.
func Merge3(base, ours, theirs string) (merged string, ok bool) {
	type sided struct {
		udiff.Edit
		side int // 0 ours, 1 theirs, 2 both (the same change on each side)
	}
	var all []sided
	theirsEdits := udiff.Lines(base, theirs)
	shared := map[udiff.Edit]bool{}
	for _, e := range theirsEdits {
		shared[e] = false
	}
	for _, e := range udiff.Lines(base, ours) {
		if _, ok := shared[e]; ok {
			shared[e] = true
			all = append(all, sided{e, 2})
			continue
		}
		all = append(all, sided{e, 0})
	}
	for _, e := range theirsEdits {
		if !shared[e] {
			all = append(all, sided{e, 1})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Start != all[j].Start {
			return all[i].Start < all[j].Start
		}
		return all[i].End < all[j].End
	})
	// Walking in start order, an edit conflicts with the other side when it
	// starts at or before the furthest end the other side reached.
	maxEnd := [2]int{-1, -1}
	edits := make([]udiff.Edit, 0, len(all))
	for _, e := range all {
		if e.side < 2 && maxEnd[1-e.side] >= e.Start {
			return "", false
		}
		for s := 0; s < 2; s++ {
			if e.side == s || e.side == 2 {
				maxEnd[s] = max(maxEnd[s], e.End)
			}
		}
		edits = append(edits, e.Edit)
	}
	out, err := udiff.Apply(base, edits)
	if err != nil {
		return "", false
	}
	return out, true
}

func unified(path, from, to string) string {
	edits := udiff.Lines(from, to)
	d, err := udiff.ToUnified("a/"+path, "b/"+path, from, edits, udiff.DefaultContextLines)
	if err != nil {
		return fmt.Sprintf("(no diff: %v)", err)
	}
	return d
}

// UndoPlan is the outcome of undoing one task, file by file.
type UndoPlan struct {
	TaskID string
	Files  []FileRevert // in the order the task first edited them
}

// Conflicts lists the files the undo leaves alone because the user changed
// them where the task did.
func (p *UndoPlan) Conflicts() []FileRevert {
	var out []FileRevert
	for _, f := range p.Files {
		if f.Action == RevertConflict {
			out = append(out, f)
		}
	}
	return out
}

// PlanUndo decides the undo of every file a task changed. read returns a
// file's current text (the open buffer when the editor has one) and whether
// it exists.
func PlanUndo(taskID string, changes []FileChange, read func(path string) (text string, exists bool, err error)) (*UndoPlan, error) {
	p := &UndoPlan{TaskID: taskID}
	for _, fc := range changes {
		cur, exists, err := read(fc.Path)
		if err != nil {
			return nil, fmt.Errorf("undo task %s: read %s: %w", taskID, fc.Path, err)
		}
		p.Files = append(p.Files, RevertFile(fc, cur, exists))
	}
	return p, nil
}
