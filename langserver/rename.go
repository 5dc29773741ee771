package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

type renameArgs struct {
	File    string `json:"file" desc:"the file where the symbol is declared or used (workspace-relative path)"`
	Symbol  string `json:"symbol" desc:"the symbol's current name as written in the file, e.g. Greet"`
	Line    int    `json:"line,omitempty" desc:"1-based line of the symbol, only when the name occurs for different symbols in the file"`
	NewName string `json:"new_name" desc:"the new name, e.g. Hello"`
}

// RenameOutput is the Data of a rename_symbol Result: what was renamed,
// by which server, and every file it touched.
type RenameOutput struct {
	Server  string        `json:"server"`
	Symbol  string        `json:"symbol"`
	NewName string        `json:"newName"`
	Files   []RenamedFile `json:"files"`
	Edits   int           `json:"edits"`
}

// RenamedFile is one file a rename changed.
type RenamedFile struct {
	Path  string `json:"path"`
	Edits int    `json:"edits"`
}

func (t *toolset) rename(ctx context.Context, a *renameArgs) (tools.Result, error) {
	newName := strings.TrimSpace(a.NewName)
	if newName == "" {
		return errorf("new_name is empty: give the symbol's new name"), nil
	}
	tg, res, err := t.locate(ctx, &symbolArgs{File: a.File, Symbol: a.Symbol, Line: a.Line})
	if tg == nil {
		return *res, err
	}
	params := tg.docPos()
	params["newName"] = newName
	var we workspaceEdit
	server, err := t.env.Source.Request(ctx, tg.abs, tg.text, "textDocument/rename", params, &we)
	if err != nil {
		var le *Error
		if errors.As(err, &le) && le.Server != "" && !strings.Contains(le.Err.Error(), "no answer") {
			// The server refused (not an identifier, a conflict, a
			// built-in): the model reads why.
			return errorf("%s cannot rename %s (%s:%d) to %s: %v. Nothing was changed", le.Server, a.Symbol, tg.path, tg.line, newName, le.Err), nil
		}
		return failed(err)
	}
	perFile, order, err := fileEdits(we)
	if err != nil {
		return errorf("%s answered a rename agentls cannot apply: %v. Nothing was changed", server, err), nil
	}
	if len(order) == 0 {
		return errorf("%s found nothing to rename for %s (%s:%d). Nothing was changed", server, a.Symbol, tg.path, tg.line), nil
	}
	ws := t.env.Workspace
	var edits []workspace.FileEdit
	var unopened []string
	out := &RenameOutput{Server: server, Symbol: a.Symbol, NewName: newName}
	var absFiles []string
	var preview []tools.FileChange // every file's change, as applied below
	for _, u := range order {
		p, err := ws.Resolve(string(u))
		if err != nil {
			return errorf("the rename would change %s, outside the workspace (%v). Nothing was changed", u.Path(), err), nil
		}
		if err := ws.CheckWrite(p); err != nil {
			return errorf("the rename would change %s: %v. Nothing was changed", p, err), nil
		}
		f, err := ws.ReadFile(ctx, p)
		if err != nil {
			return errorf("the rename would change %s, which cannot be read: %v. Nothing was changed", p, err), nil
		}
		tes := make([]workspace.TextEdit, 0, len(perFile[u]))
		for _, e := range perFile[u] {
			tes = append(tes, workspace.TextEdit{Range: workspace.Range{Start: workspace.Position(e.Range.Start), End: workspace.Position(e.Range.End)}, NewText: e.NewText})
		}
		fe := workspace.FileEdit{Path: p, BaseVersion: f.Version, BaseHash: f.Hash, Edits: tes}
		pv, err := tools.PreviewOf(ws, f.Text, fe)
		if err != nil {
			return errorf("%s's rename does not fit %s as it is now (%v): the file changed under the server. Nothing was changed", server, p, err), nil
		}
		if err := checkRename(f.Text, shortName(a.Symbol), newName, tes); err != nil {
			return errorf("%s answered a rename of %s to %s that changes more than the name in %s: %v. The whole rename was refused; nothing was changed", server, a.Symbol, newName, p, err), nil
		}
		edits = append(edits, fe)
		preview = append(preview, pv)
		if !f.FromBuffer {
			unopened = append(unopened, p.String())
		}
		out.Files = append(out.Files, RenamedFile{Path: p.String(), Edits: len(tes)})
		out.Edits += len(tes)
		absFiles = append(absFiles, ws.Abs(p))
	}
	if len(unopened) > 0 {
		summary := fmt.Sprintf("rename %s to %s in %s", a.Symbol, newName, strings.Join(unopened, ", "))
		if r, err := tools.Approve(ctx, t.env.Approver, tools.ApprovalRequest{Tool: "rename_symbol", Summary: summary, Path: unopened[0], Preview: preview}); r != nil || err != nil {
			if r == nil {
				return tools.Result{}, err
			}
			return *r, err
		}
	}
	label := fmt.Sprintf("rename_symbol %s → %s", a.Symbol, newName)
	if err := t.env.Editor.Apply(ctx, label, edits); err != nil {
		if errors.Is(err, workspace.ErrStale) {
			return errorf("a file changed while renaming: call rename_symbol again. Nothing was changed"), nil
		}
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return errorf("the rename was not applied: %v", err), nil
	}
	t.env.Source.Changed(context.WithoutCancel(ctx), absFiles)
	var b strings.Builder
	fmt.Fprintf(&b, "renamed %s to %s via %s: %d edit(s) in %d file(s)\n", a.Symbol, newName, server, out.Edits, len(out.Files))
	changed := make([]string, 0, len(out.Files))
	for _, f := range out.Files {
		fmt.Fprintf(&b, "- %s (%d)\n", f.Path, f.Edits)
		changed = append(changed, f.Path)
	}
	return tools.Result{Text: strings.TrimRight(b.String(), "\n"), Files: changed, Changed: changed,
		Evidence: strings.SplitN(b.String(), "\n", 2)[0], Data: out}, nil
}

// fileEdits reads a WorkspaceEdit's text edits per file (changes or
// documentChanges), in a stable order. File creations, renames and
// deletions are refused: a symbol rename that moves files is not applied.
func fileEdits(we workspaceEdit) (map[uri.URI][]textEdit, []uri.URI, error) {
	per := map[uri.URI][]textEdit{}
	for _, raw := range we.DocumentChanges {
		var dc textDocumentEdit
		if err := json.Unmarshal(raw, &dc); err != nil {
			return nil, nil, err
		}
		if dc.Kind != "" {
			return nil, nil, fmt.Errorf("it would %s a file", dc.Kind)
		}
		per[dc.TextDocument.URI] = append(per[dc.TextDocument.URI], dc.Edits...)
	}
	if len(we.DocumentChanges) == 0 {
		for u, es := range we.Changes {
			per[u] = append(per[u], es...)
		}
	}
	order := make([]uri.URI, 0, len(per))
	for u, es := range per {
		if len(es) > 0 {
			order = append(order, u)
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	return per, order, nil
}

// ReportLine is the rename's line in the task report
// (session.ReportLiner): what, via which server, every file touched.
func (o *RenameOutput) ReportLine() string {
	files := make([]string, len(o.Files))
	for i, f := range o.Files {
		files[i] = fmt.Sprintf("%s (%d)", f.Path, f.Edits)
	}
	return fmt.Sprintf("`%s` → `%s` via %s: %d edit(s) in %d file(s): %s", o.Symbol, o.NewName, o.Server, o.Edits, len(o.Files), strings.Join(files, ", "))
}
