package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
)

// An edit plan is a change planned once: for every file, the base it was
// made for (the text's hash and, for an editor buffer, its version), its
// hunks and the text it leaves. The preview is computed from the plan
// (PlannedFile.Before and After, or Hunks), and every face applies the same
// plan through its applier: the editor's one workspace/applyEdit (lsp), the
// client's fs/write_text_file (acp), or DiskEditor (the command line, and
// files no editor holds). Whether a file changed since its edit was planned
// is decided by one rule, CheckBase, here and nowhere else.

// PlannedFile is one file of a Plan.
type PlannedFile struct {
	Edit FileEdit // as planned: its base and its hunks
	Abs  string   // the file's absolute OS path
	// Before is the text the edit applies to (BOM stripped, line endings
	// as stored); "" for a new file. After is the text it leaves, the
	// bytes the applier writes (a BOM added back when BOM).
	Before, After string
	// Open: the text is the editor's buffer (File.FromBuffer), at
	// Version.
	Open    bool
	Version int32
	BOM     bool
	// Edits are Edit.Edits as applied to Before: on a CRLF file, "\n" in
	// the new text is written "\r\n".
	Edits []TextEdit
}

// Bytes is what the file holds once the plan is applied: After, with the
// file's BOM.
func (f PlannedFile) Bytes() []byte {
	if f.BOM {
		return append(append([]byte(nil), utf8BOM...), f.After...)
	}
	return []byte(f.After)
}

// Hunks is the file's change as line hunks, for a preview.
func (f PlannedFile) Hunks() []Hunk { return DiffHunks(f.Before, f.After) }

// Diff is the file's change as a unified diff (no headers).
func (f PlannedFile) Diff() string {
	var b strings.Builder
	for _, h := range f.Hunks() {
		b.WriteString(h.Diff(f.Before))
	}
	return b.String()
}

// Plan is a change to one or more files, checked against their current
// text and computed once. Every file is checked before anything is
// written: a stale file plans nothing.
type Plan struct {
	Files []PlannedFile
}

// Open reports whether a file of the plan is held by the editor.
func (p *Plan) Open() bool {
	for _, f := range p.Files {
		if f.Open {
			return true
		}
	}
	return false
}

// FileEdits are the plan's edits, as planned.
func (p *Plan) FileEdits() []FileEdit {
	out := make([]FileEdit, len(p.Files))
	for i, f := range p.Files {
		out[i] = f.Edit
	}
	return out
}

// Plan reads every file of edits (the editor's buffer when it holds one,
// else the client's text or the disk), checks it with CheckBase and
// computes the text each edit leaves. The same file may not appear twice.
func (w *Workspace) Plan(ctx context.Context, edits []FileEdit) (*Plan, error) {
	plan := &Plan{Files: make([]PlannedFile, 0, len(edits))}
	seen := make(map[string]bool, len(edits))
	for _, fe := range edits {
		if fe.Path.IsZero() {
			return nil, fmt.Errorf("edit: empty path: %w", ErrInvalidPath)
		}
		abs := w.Abs(fe.Path)
		if seen[abs] {
			return nil, fmt.Errorf("edit %s: the same file appears twice in one edit; merge its edits", fe.Path)
		}
		seen[abs] = true
		pf, err := w.PlanFile(ctx, fe)
		if err != nil {
			return nil, err
		}
		plan.Files = append(plan.Files, *pf)
	}
	return plan, nil
}

// PlanFile plans one file's edit against its current text (see Plan).
func (w *Workspace) PlanFile(ctx context.Context, fe FileEdit) (*PlannedFile, error) {
	pf := &PlannedFile{Edit: fe, Abs: w.Abs(fe.Path)}
	if fe.Create {
		if _, ok := w.buffers.Get(pf.Abs); ok {
			return nil, fmt.Errorf("create %s: it is open in the editor: %w", fe.Path, fs.ErrExist)
		}
		if _, err := w.readDisk(fe.Path); err == nil {
			return nil, fmt.Errorf("create %s: it already exists; read it and edit it instead: %w", fe.Path, fs.ErrExist)
		}
		after, err := ApplyEdits("", fe.Edits)
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", fe.Path, err)
		}
		pf.After, pf.Edits = after, fe.Edits
		return pf, nil
	}
	cur, err := w.ReadFile(ctx, fe.Path)
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	if err := CheckBase(fe, cur); err != nil {
		return nil, err
	}
	pf.Edits = editsFor(cur, fe.Edits)
	after, err := ApplyEdits(cur.Text, pf.Edits)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", fe.Path, err)
	}
	pf.Before, pf.After = cur.Text, after
	pf.Open, pf.Version, pf.BOM = cur.FromBuffer, cur.Version, cur.BOM
	return pf, nil
}

// CheckBase is the one staleness rule: an edit planned for a file applies
// only while the file's current text, cur (the editor's buffer if it holds
// the file, else the client's text or the disk), still hashes to the
// edit's BaseHash and, for a buffer, is still at BaseVersion when the edit
// names one. Otherwise the error wraps ErrStale, and the model reads the
// file again. An edit without a base is refused: read the file first.
func CheckBase(fe FileEdit, cur *File) error {
	if fe.BaseHash == "" {
		return fmt.Errorf("edit %s: no base hash: read the file before editing it", fe.Path)
	}
	if cur.Hash == fe.BaseHash && !(cur.FromBuffer && fe.BaseVersion != 0 && cur.Version != fe.BaseVersion) {
		return nil
	}
	where := "on disk"
	if cur.FromBuffer {
		where = fmt.Sprintf("in the editor (now version %d)", cur.Version)
	}
	return fmt.Errorf("edit %s: %w: it was changed %s after it was read; read it again and redo the edit", fe.Path, ErrStale, where)
}

// editsFor adapts edits to the file they apply to: on a CRLF file, "\n"
// in the new text not already preceded by "\r" becomes "\r\n".
func editsFor(cur *File, edits []TextEdit) []TextEdit {
	if !cur.CRLF {
		return edits
	}
	out := make([]TextEdit, len(edits))
	for i, te := range edits {
		te.NewText = toCRLF(te.NewText)
		out[i] = te
	}
	return out
}
