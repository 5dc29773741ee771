package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentls/agentls/workspace"
)

type writeFileArgs struct {
	Path             string `json:"path" desc:"file to create or replace (workspace-relative)"`
	Content          string `json:"content" desc:"the complete new text of the file"`
	OverwriteUnsaved bool   `json:"overwrite_unsaved,omitempty" desc:"replace the file even if it is open in the editor with unsaved changes (they are lost)"`
}

func newWriteFile(r *Registry) Tool {
	return newTool("write_file", WritesFiles, func(ctx context.Context, a *writeFileArgs) (Result, error) {
		return r.writeFile(ctx, a)
	})
}

func (r *Registry) writeFile(ctx context.Context, a *writeFileArgs) (Result, error) {
	w := r.env.Workspace
	p, res := r.resolve(a.Path)
	if res != nil {
		return *res, nil
	}
	if err := w.CheckWrite(p); err != nil {
		return errorf("%v", err), nil
	}
	if p.String() == "." || strings.HasSuffix(a.Path, "/") {
		return errorf("%q names a folder; give a file path such as \"docs/notes.md\"", a.Path), nil
	}
	f, err := w.ReadFile(ctx, p)
	create := false
	switch {
	case err == nil:
	case errors.Is(err, workspace.ErrNotExist):
		create = true
	case errors.Is(err, workspace.ErrIsDir):
		return errorf("%s is a folder; give a file path", p), nil
	case errors.Is(err, workspace.ErrBinary), errors.Is(err, workspace.ErrTooLarge):
		return errorf("%v; write_file replaces text files up to the read limit only", err), nil
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	default:
		return errorf("cannot write %s: %v", p, err), nil
	}
	content := a.Content
	if !create && (f.FromBuffer || f.FromClient) && !a.OverwriteUnsaved && r.unsaved(p, f) {
		return errorf("%s is open in the editor with unsaved changes; write_file would discard them. Use edit_file for targeted changes, or set overwrite_unsaved: true to replace them. Nothing was written", p), nil
	}
	if !create {
		if f.CRLF {
			content = crlf(content)
		}
		if content == f.Text {
			return Result{Text: fmt.Sprintf("%s already has this content; nothing was written", p), Files: []string{p.String()}}, nil
		}
	}
	fe := workspace.FileEdit{Path: p, Create: create,
		Edits: []workspace.TextEdit{{NewText: content}}}
	before := ""
	if !create {
		before = f.Text
		fe.BaseHash, fe.BaseVersion = f.Hash, f.Version
		fe.Edits[0].Range.End = workspace.PositionOf(f.Text, len(f.Text))
	}
	if create || !f.FromBuffer {
		verb := "write"
		if create {
			verb = "create"
		}
		// The preview is fe, the edit applied after a yes.
		pv, err := PreviewOf(r.env.Workspace, before, fe)
		if err != nil {
			return errorf("cannot write %s: %v. Nothing was written", p, err), nil
		}
		if res, err := r.approve(ctx, ApprovalRequest{Tool: "write_file", Summary: verb + " " + p.String(), Path: p.String(), Preview: []FileChange{pv}}); res != nil || err != nil {
			return deref(res), err
		}
	}
	if res, err := r.apply(ctx, "write_file", p, fe); res != nil || err != nil {
		return deref(res), err
	}
	n := len(splitLines(content))
	out := &EditOutput{Path: p.String(), Replacements: 1, Created: create, Through: through(!create && f.FromBuffer)}
	text := fmt.Sprintf("created %s (%d %s)", p, n, plural(n, "line", "lines"))
	if !create {
		old := len(splitLines(f.Text))
		text = fmt.Sprintf("replaced %s (%d %s; it had %d)", p, n, plural(n, "line", "lines"), old)
		if f.FromBuffer {
			text += " in the editor's buffer: unsaved until the user saves"
		}
	}
	return Result{Text: text, Files: []string{p.String()}, Changed: []string{p.String()}, Data: out,
		Present: &Presentation{Diffs: []Diff{{Path: p.String(), Old: before, New: content, Created: create}}}}, nil
}

// unsaved reports whether the buffer f (read from the editor) differs from
// the file on disk.
func (r *Registry) unsaved(p workspace.Path, f *workspace.File) bool {
	disk, err := r.env.Workspace.ReadDisk(p)
	return err != nil || disk.Text != f.Text
}

// presentWriteFile: "Write a.go"; the diff is shown where the editor
// applied it, the result's first line otherwise.
func presentWriteFile(a *writeFileArgs, _ *Result) Presentation {
	return Presentation{Title: "Write " + a.Path, Activity: "writing " + shown(a.Path), Kind: KindEdit,
		Locations: at(a.Path, 0), Show: ShowLine}
}
