package workspace

import (
	"strings"
	"testing"
)

// TestHunksAndWhatWasKept: an edit splits into minimal line hunks, and
// the text an editor holds after a review tells which hunks were kept.
func TestHunksAndWhatWasKept(t *testing.T) {
	before := "a\nb\nc\nd\ne\nf\n"
	for _, tc := range []struct {
		name, after string
		hunks       int
		keep        []bool // which hunks the result keeps
	}{
		{"two hunks, both kept", "A\nb\nc\nd\nE\nf\n", 2, []bool{true, true}},
		{"two hunks, first kept", "A\nb\nc\nd\nE\nf\n", 2, []bool{true, false}},
		{"two hunks, second kept", "A\nb\nc\nd\nE\nf\n", 2, []bool{false, true}},
		{"two hunks, none kept", "A\nb\nc\nd\nE\nf\n", 2, []bool{false, false}},
		{"insert and delete", "a\nnew\nb\nc\nd\nf\n", 2, []bool{false, true}},
		{"adjacent lines are one hunk", "a\nB\nC\nd\ne\nf\n", 1, []bool{true}},
		{"no final newline", "a\nb\nc\nd\ne\nF", 1, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hunks := DiffHunks(before, tc.after)
			if len(hunks) != tc.hunks {
				t.Fatalf("DiffHunks = %d hunks; want %d: %+v", len(hunks), tc.hunks, hunks)
			}
			var all []TextEdit
			var kept []TextEdit
			for i, h := range hunks {
				all = append(all, h.Edit)
				if tc.keep[i] {
					kept = append(kept, h.Edit)
				}
			}
			if got, err := ApplyEdits(before, all); err != nil || got != tc.after {
				t.Fatalf("applying every hunk = %q, %v; want %q", got, err, tc.after)
			}
			result, err := ApplyEdits(before, kept)
			if err != nil {
				t.Fatal(err)
			}
			applied, ok := AppliedHunks(before, hunks, result)
			if !ok {
				t.Fatalf("AppliedHunks(%q) not explained", result)
			}
			for i := range hunks {
				if applied[i] != tc.keep[i] {
					t.Errorf("hunk %d applied = %v; want %v", i, applied[i], tc.keep[i])
				}
			}
			fr, _ := NewFileReview(Path{}, before, hunks, result)
			for _, i := range fr.Rejected {
				if d := hunks[i].Diff(before); !strings.Contains(fr.RejectedDiff(), d) || !strings.HasPrefix(d, "@@ -") {
					t.Errorf("rejected diff %q lacks hunk %d %q", fr.RejectedDiff(), i, d)
				}
			}
		})
	}
	if _, ok := AppliedHunks(before, DiffHunks(before, "A\nb\nc\nd\ne\nf\n"), "a\nb\nX\nd\ne\nf\n"); ok {
		t.Error("a text changed elsewhere was explained by the hunks")
	}
}

// TestClaimEditRelabelsTheReviewEcho: the editor's change that echoes
// what the user kept of a reviewed edit becomes agentls's; earlier and
// other files' changes stay the editor's.
func TestClaimEditRelabelsTheReviewEcho(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.go": "package a\n", "b.go": "package b\n"})
	w := newWS(t, Options{Roots: []string{root}})
	pa, pb := mustResolve(t, w, "a.go"), mustResolve(t, w, "b.go")
	w.RecordChange(pa, OriginEditor, Modified, "")
	seq := w.Seq()
	w.RecordChange(pa, OriginEditor, Modified, "")
	w.RecordChange(pb, OriginEditor, Modified, "")
	w.ClaimEdit(pa, seq, "edit_file a.go")
	if out, _ := w.ChangedOutside(seq, "edit_file a.go", pa); len(out) != 0 {
		t.Errorf("ChangedOutside(a.go) after the claim = %v; want none", out)
	}
	if out, _ := w.ChangedOutside(0, "edit_file a.go", pa); len(out) != 1 {
		t.Errorf("ChangedOutside(a.go) from the start = %v; want the earlier editor change", out)
	}
	if out, _ := w.ChangedOutside(seq, "edit_file a.go", pb); len(out) != 1 {
		t.Errorf("ChangedOutside(b.go) = %v; want the editor's change", out)
	}
}
