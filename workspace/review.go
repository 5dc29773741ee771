package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// Review before apply: the user sees each change of an edit (a hunk) and
// keeps or rejects it before it lands. The policy (which edits are
// reviewed) is the session's; how the user is shown the change is the
// face's (an editor with per-change confirmation gets one TextEdit per
// hunk; others are asked per file). What the user rejected comes back as
// a *RejectedError, which the file tools turn into a tool result the model
// reads.

// Hunk is one change of an edit: a run of whole lines of the text before
// replaced by other lines, apart from the next hunk by at least one line
// kept as it was.
type Hunk struct {
	Start, End int    // byte offsets in the text before
	New        string // the lines that replace [Start, End)
	// Edit is the hunk as an LSP text edit of the text before.
	Edit TextEdit
	// OldLine and NewLine are the 1-based first lines of the hunk in the
	// text before and in the intended text after; OldLines and NewLines
	// their line counts.
	OldLine, OldLines, NewLine, NewLines int
}

// Diff is the hunk as a unified diff hunk ("@@ -3,1 +3,2 @@" and its
// lines), for people and for the model.
func (h Hunk) Diff(before string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h.OldLine, h.OldLines, h.NewLine, h.NewLines)
	for _, l := range splitKeep(before[h.Start:h.End]) {
		b.WriteString("-" + l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for _, l := range splitKeep(h.New) {
		b.WriteString("+" + l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return b.String()
}

// splitKeep splits s into lines, each with its "\n" (the last may lack it).
func splitKeep(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// DiffHunks splits the change from before to after into minimal line
// hunks, in order. Applying every hunk to before gives after.
func DiffHunks(before, after string) []Hunk {
	edits := udiff.Lines(before, after)
	// Merge edits that touch (a deletion next to an insertion): one
	// hunk is what the user sees as one change.
	var merged []udiff.Edit
	for _, e := range edits {
		if n := len(merged); n > 0 && merged[n-1].End == e.Start {
			merged[n-1].End = e.End
			merged[n-1].New += e.New
			continue
		}
		merged = append(merged, e)
	}
	hunks := make([]Hunk, 0, len(merged))
	delta := 0 // lines added so far (after - before)
	for _, e := range merged {
		oldLine := strings.Count(before[:e.Start], "\n") + 1
		oldLines := countLines(before[e.Start:e.End])
		newLines := countLines(e.New)
		hunks = append(hunks, Hunk{
			Start: e.Start, End: e.End, New: e.New,
			Edit:    TextEdit{Range: Range{Start: PositionOf(before, e.Start), End: PositionOf(before, e.End)}, NewText: e.New},
			OldLine: oldLine, OldLines: oldLines, NewLine: oldLine + delta, NewLines: newLines,
		})
		delta += newLines - oldLines
	}
	return hunks
}

func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// AppliedHunks finds which hunks of before were applied to give result:
// applied[i] reports hunk i. ok is false when result is not before with
// some of the hunks applied (the text also changed otherwise). When both
// applying and not applying a hunk explain result, applied is preferred.
func AppliedHunks(before string, hunks []Hunk, result string) (applied []bool, ok bool) {
	applied = make([]bool, len(hunks))
	type state struct{ i, r int }
	failed := map[state]bool{}
	// match reports whether hunks[i:] explain result[r:], the text before
	// being at the end of hunk i-1.
	var match func(i, r int) bool
	match = func(i, r int) bool {
		if failed[state{i, r}] {
			return false
		}
		prevEnd := 0
		if i > 0 {
			prevEnd = hunks[i-1].End
		}
		if i == len(hunks) {
			if result[r:] == before[prevEnd:] {
				return true
			}
			failed[state{i, r}] = true
			return false
		}
		gap := before[prevEnd:hunks[i].Start]
		if !strings.HasPrefix(result[r:], gap) {
			failed[state{i, r}] = true
			return false
		}
		r += len(gap)
		h := hunks[i]
		if strings.HasPrefix(result[r:], h.New) && match(i+1, r+len(h.New)) {
			applied[i] = true
			return true
		}
		if old := before[h.Start:h.End]; strings.HasPrefix(result[r:], old) && match(i+1, r+len(old)) {
			applied[i] = false
			return true
		}
		failed[state{i, r - len(gap)}] = true
		return false
	}
	if !match(0, 0) {
		return make([]bool, len(hunks)), false
	}
	return applied, true
}

// ErrRejected is wrapped by the error of an Apply whose change the user
// rejected in whole or in part (a *RejectedError says what).
var ErrRejected = errors.New("the user rejected the change")

// ErrNoReview is wrapped by the error of a Reviewer that cannot show this
// edit for review itself (the client lacks per-change confirmation, the
// file is not open): the caller asks the user another way.
var ErrNoReview = errors.New("this editor cannot review the change itself")

// Reviewer is an Editor that can show an edit to the user, change by
// change, and apply only what the user keeps. Review returns nil when
// everything was applied, a *RejectedError when something was rejected,
// an error wrapping ErrNoReview when it cannot show this edit (nothing was
// sent), or another error as Apply does.
type Reviewer interface {
	Editor
	Review(ctx context.Context, label string, edits []FileEdit) error
}

// FileReview is the outcome of the review of one file.
type FileReview struct {
	Path     Path
	Before   string // the text the edit was made against
	Hunks    []Hunk // every hunk of the edit
	Rejected []int  // indexes into Hunks the user rejected
	// After is the file's text after the review: Before with the kept
	// hunks applied. Equal to Before when everything was rejected.
	After  string
	Create bool // the edit created the file (rejected: not created)
}

// Applied reports whether any hunk of the file was applied.
func (f FileReview) Applied() bool { return len(f.Rejected) < len(f.Hunks) }

// RejectedError is the error of an Apply the user reviewed and rejected
// in whole or in part. Files holds every reviewed file of the edit, those
// fully kept included; what was kept was applied.
type RejectedError struct {
	Files  []FileReview
	Reason string // how the user rejected it, when the editor said ("" if not)
}

func (e *RejectedError) Error() string {
	var parts []string
	for _, f := range e.Files {
		if len(f.Rejected) > 0 {
			parts = append(parts, fmt.Sprintf("%s (%d of %d changes)", f.Path, len(f.Rejected), len(f.Hunks)))
		}
	}
	return "the user rejected changes to " + strings.Join(parts, ", ")
}

// Is makes errors.Is(err, ErrRejected) hold.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// AnyApplied reports whether some of the change was applied.
func (e *RejectedError) AnyApplied() bool {
	for _, f := range e.Files {
		if f.Applied() {
			return true
		}
	}
	return false
}

// RejectedDiff is the rejected hunks of f as diff text, each with its
// place: what the model reads.
func (f FileReview) RejectedDiff() string {
	var b strings.Builder
	for _, i := range f.Rejected {
		b.WriteString(f.Hunks[i].Diff(f.Before))
	}
	return b.String()
}

// NewFileReview compares what the user kept (after, the file's text once
// the editor answered) with the hunks of the edit from before. ok is false
// when after is not before with some hunks applied.
func NewFileReview(p Path, before string, hunks []Hunk, after string) (FileReview, bool) {
	applied, ok := AppliedHunks(before, hunks, after)
	fr := FileReview{Path: p, Before: before, Hunks: hunks, After: after}
	for i, a := range applied {
		if !a {
			fr.Rejected = append(fr.Rejected, i)
		}
	}
	return fr, ok
}

// ClaimEdit records the editor's changes of p after seq as agentls's,
// with label: the echo of a reviewed edit whose text agentls could not
// announce (ExpectEdit) before the user chose what to keep. The caller
// has checked that the buffer holds only the kept part of its edit.
func (w *Workspace) ClaimEdit(p Path, seq uint64, label string) {
	c := w.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.log) - 1; i >= 0 && c.log[i].Seq > seq; i-- {
		if c.log[i].Path == p && c.log[i].Origin == OriginEditor {
			c.log[i].Origin, c.log[i].Label = OriginAgentls, label
		}
	}
}
