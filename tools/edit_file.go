package tools

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/agentls/agentls/workspace"
)

type editItem struct {
	OldString  string `json:"old_string" desc:"exact text to replace, whitespace and indentation included"`
	NewString  string `json:"new_string" desc:"replacement text (\"\" deletes old_string)"`
	ReplaceAll bool   `json:"replace_all,omitempty" desc:"replace every occurrence instead of requiring exactly one"`
}

type editFileArgs struct {
	Path       string     `json:"path" desc:"file to edit (workspace-relative)"`
	OldString  *string    `json:"old_string,omitempty" desc:"exact text to replace, whitespace and indentation included; must occur exactly once unless replace_all"`
	NewString  *string    `json:"new_string,omitempty" desc:"replacement text (\"\" deletes old_string)"`
	ReplaceAll bool       `json:"replace_all,omitempty" desc:"replace every occurrence of old_string"`
	Edits      []editItem `json:"edits,omitempty" desc:"several replacements applied together, all or none (instead of old_string/new_string)"`
}

// EditOutput is the Data of an edit_file or write_file Result.
type EditOutput struct {
	Path         string
	Replacements int    // text replacements made (1 for write_file)
	Lines        []int  // first line of each replacement in the new text
	Created      bool   // write_file made a new file
	Through      string // "editor" when the file was open there, else "disk"
}

func newEditFile(r *Registry) Tool {
	return newTool("edit_file", WritesFiles, func(ctx context.Context, a *editFileArgs) (Result, error) {
		return r.editFile(ctx, a)
	})
}

// match is one occurrence to replace: [start, end) in the text read.
type match struct {
	start, end int
	newText    string
	edit       int // index of the edit it belongs to
}

func (r *Registry) editFile(ctx context.Context, a *editFileArgs) (Result, error) {
	w := r.env.Workspace
	p, res := r.resolve(a.Path)
	if res != nil {
		return *res, nil
	}
	if err := w.CheckWrite(p); err != nil {
		return errorf("%v", err), nil
	}
	if SecretPath(p) {
		// Its results quote the file's lines and answer whether a guess
		// occurs in it: a read, asked for like read_file's.
		if res, err := r.approve(ctx, ApprovalRequest{Tool: "edit_file", Summary: secretSummary("edit", p), Path: p.String(), Secret: true}); res != nil || err != nil {
			return deref(res), err
		}
	}
	edits := a.Edits
	switch {
	case len(edits) > 0 && (a.OldString != nil || a.NewString != nil):
		return errorf("give either old_string/new_string or edits, not both"), nil
	case len(edits) == 0 && a.OldString == nil:
		return errorf("missing old_string: give path, old_string and new_string, or path and edits: [{old_string, new_string}]"), nil
	case len(edits) == 0 && a.NewString == nil:
		return errorf("missing new_string (use \"\" to delete old_string)"), nil
	case len(edits) == 0:
		edits = []editItem{{OldString: *a.OldString, NewString: *a.NewString, ReplaceAll: a.ReplaceAll}}
	}
	f, err := w.ReadFile(ctx, p)
	if err != nil {
		switch {
		case errors.Is(err, workspace.ErrNotExist):
			return errorf("no such file: %s; to create a file use write_file%s", p, r.suggest(p)), nil
		case errors.Is(err, workspace.ErrIsDir):
			return errorf("%s is a folder, not a file", p), nil
		case ctx.Err() != nil:
			return Result{}, ctx.Err()
		}
		return errorf("cannot edit %s: %v", p, err), nil
	}
	text := f.Text
	var matches []match
	for i, e := range edits {
		label := ""
		if len(edits) > 1 {
			label = fmt.Sprintf("edit %d: ", i+1)
		}
		old, repl := e.OldString, e.NewString
		if f.CRLF {
			old, repl = crlf(old), crlf(repl)
		}
		switch {
		case old == "":
			return errorf("%sold_string is empty: include the text to replace (to insert, include a neighbouring line and repeat it in new_string; to write a whole file, use write_file)", label), nil
		case old == repl:
			return errorf("%sold_string and new_string are the same: this edit would change nothing", label), nil
		}
		var found []int
		for off := 0; off <= len(text)-len(old); {
			j := strings.Index(text[off:], old)
			if j < 0 {
				break
			}
			found = append(found, off+j)
			off += j + len(old)
		}
		switch {
		case len(found) == 0:
			return errorf("%s%s", label, notFound(p.String(), text, old)), nil
		case len(found) > 1 && !e.ReplaceAll:
			var lines []string
			for k, off := range found {
				if k == 10 {
					lines = append(lines, "...")
					break
				}
				lines = append(lines, fmt.Sprint(lineOf(text, off)))
			}
			return errorf("%sold_string occurs %d times in %s (lines %s): include more surrounding lines to make it unique, or set replace_all: true to replace every one. Nothing was changed",
				label, len(found), p, strings.Join(lines, ", ")), nil
		}
		for _, off := range found {
			matches = append(matches, match{start: off, end: off + len(old), newText: repl, edit: i})
		}
	}
	sort.SliceStable(matches, func(i, j int) bool { return matches[i].start < matches[j].start })
	for i := 1; i < len(matches); i++ {
		if matches[i].start < matches[i-1].end {
			return errorf("edits %d and %d overlap in %s (both change line %d): merge them into one edit. Nothing was changed",
				matches[i-1].edit+1, matches[i].edit+1, p, lineOf(text, matches[i].start)), nil
		}
	}
	tes := textEdits(text, matches)
	fe := workspace.FileEdit{Path: p, BaseVersion: f.Version, BaseHash: f.Hash, Edits: tes}
	if !f.FromBuffer {
		// The preview is the plan below, the one applied after a yes.
		pv, err := PreviewOf(w, text, fe)
		if err != nil {
			return errorf("cannot edit %s: %v. Nothing was changed", p, err), nil
		}
		if res, err := r.approve(ctx, ApprovalRequest{Tool: "edit_file", Summary: "edit " + p.String(), Path: p.String(), Preview: []FileChange{pv}}); res != nil || err != nil {
			return deref(res), err
		}
	}
	if res, err := r.apply(ctx, "edit_file", p, fe); res != nil || err != nil {
		return deref(res), err
	}
	newText, _ := workspace.ApplyEdits(text, tes)
	out := &EditOutput{Path: p.String(), Replacements: len(matches), Through: through(f.FromBuffer)}
	delta := 0
	for _, m := range matches {
		out.Lines = append(out.Lines, lineOf(newText, m.start+delta))
		delta += len(m.newText) - (m.end - m.start)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "edited %s: %d %s", p, len(matches), plural(len(matches), "replacement", "replacements"))
	if f.FromBuffer {
		b.WriteString(" (in the editor's buffer: unsaved until the user saves)")
	}
	b.WriteString(". The changed lines now read:\n")
	b.WriteString(snippets(newText, matches))
	return Result{Text: strings.TrimRight(b.String(), "\n"), Files: []string{p.String()}, Changed: []string{p.String()}, Data: out,
		Present: &Presentation{Diffs: []Diff{{Path: p.String(), Old: text, New: newText}}}}, nil
}

func deref(r *Result) Result {
	if r == nil {
		return Result{}
	}
	return *r
}

func through(fromBuffer bool) string {
	if fromBuffer {
		return "editor"
	}
	return "disk"
}

// apply sends one FileEdit to the Editor and turns refusals into results.
// It is the one place every write of the file tools goes through, so the
// write rule (workspace.CheckWrite: not .git, not a git dir, not .agentls)
// is checked here again, right before the edit, whatever the tool checked
// before asking for approval.
func (r *Registry) apply(ctx context.Context, toolName string, p workspace.Path, fe workspace.FileEdit) (*Result, error) {
	if err := r.env.Workspace.CheckWrite(p); err != nil {
		res := errorf("%v", err)
		return &res, nil
	}
	label := toolName + " " + p.String()
	ed := r.env.Editor
	if !fe.Create && r.env.Workspace.BufferStale(p) {
		// The editor's buffer is clean but the disk changed under it (a
		// command rewrote the file): the text was read from disk, so the
		// edit goes to disk, where the editor reloads a clean buffer from.
		ed = r.env.Workspace.DiskEditor()
	}
	err := ed.Apply(ctx, label, []workspace.FileEdit{fe})
	var rej *workspace.RejectedError
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &rej):
		res := RejectedResult(rej)
		return &res, nil
	case errors.Is(err, workspace.ErrStale):
		res := errorf("file changed since you read it: read it again (read_file %s) and redo the change. Nothing was changed", p)
		return &res, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	res := errorf("the change to %s was not applied: %v", p, err)
	return &res, nil
}

// RejectedResult is the tool result of an edit the user reviewed and
// rejected in whole or in part (the review setting): an error the model
// can act on, naming the rejected changes as diff hunks, and the kept ones
// as applied. Every tool that writes through the workspace's Editor
// returns it for a *workspace.RejectedError.
func RejectedResult(e *workspace.RejectedError) Result {
	var b strings.Builder
	var changed []string
	for _, f := range e.Files {
		switch {
		case len(f.Rejected) == 0:
			fmt.Fprintf(&b, "%s: the user kept the change; it was applied.\n", f.Path)
			changed = append(changed, f.Path.String())
		case !f.Applied():
			what := "the change"
			if f.Create {
				what = "the new file (it was not created)"
			}
			fmt.Fprintf(&b, "%s: the user reviewed and rejected %s; nothing in it was changed. Rejected:\n```diff\n%s```\n", f.Path, what, f.RejectedDiff())
		default:
			fmt.Fprintf(&b, "%s: the user kept %d of %d changes, which were applied, and rejected %d; the rejected ones were not applied:\n```diff\n%s```\n",
				f.Path, len(f.Hunks)-len(f.Rejected), len(f.Hunks), len(f.Rejected), f.RejectedDiff())
			changed = append(changed, f.Path.String())
		}
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, "(%s)\n", e.Reason)
	}
	b.WriteString("Do not make a rejected change again as it is: go on without it, do it another way, or say in your answer what you would need.")
	if len(changed) > 0 {
		b.WriteString(" Read the file again before editing it further.")
	}
	files := make([]string, len(e.Files))
	for i, f := range e.Files {
		files[i] = f.Path.String()
	}
	return Result{IsError: true, Text: b.String(), Files: files, Changed: changed}
}

// crlf turns "\n" into "\r\n" where it is not already.
func crlf(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// lineOf is the 1-based line number of byte offset off.
func lineOf(text string, off int) int {
	return strings.Count(text[:min(off, len(text))], "\n") + 1
}

// textEdits converts sorted, non-overlapping matches to TextEdits in one
// pass over text.
func textEdits(text string, ms []match) []workspace.TextEdit {
	out := make([]workspace.TextEdit, 0, len(ms))
	line, lineStart, pos := uint32(0), 0, 0
	at := func(off int) workspace.Position {
		for pos < off {
			j := strings.IndexByte(text[pos:off], '\n')
			if j < 0 {
				pos = off
				break
			}
			line++
			pos += j + 1
			lineStart = pos
		}
		return workspace.Position{Line: line, Character: workspace.UTF16Len(text[lineStart:off])}
	}
	for _, m := range ms {
		start := at(m.start)
		end := at(m.end)
		out = append(out, workspace.TextEdit{Range: workspace.Range{Start: start, End: end}, NewText: m.newText})
	}
	return out
}

// snippets shows the changed lines of the new text with a line around each.
func snippets(newText string, ms []match) string {
	lines := splitLines(newText)
	var b strings.Builder
	shown := 0
	last := 0
	delta := 0
	for i, m := range ms {
		start := m.start + delta
		end := start + len(m.newText)
		delta += len(m.newText) - (m.end - m.start)
		if i == 3 {
			fmt.Fprintf(&b, "... and %d more replacements\n", len(ms)-3)
			break
		}
		from := max(lineOf(newText, start)-1, last+1, 1)
		to := min(lineOf(newText, max(end-1, start))+1, len(lines))
		if from > 1 && last > 0 && from > last+1 {
			b.WriteString("   ...\n")
		}
		for n := from; n <= to && shown < 40; n++ {
			writeNumbered(&b, n, lines[n-1])
			shown++
		}
		last = max(last, to)
	}
	if len(lines) == 0 {
		b.WriteString("(the file is now empty)\n")
	}
	return b.String()
}

var lineNumberPrefix = lazyregexp.New(`^\s*\d+\t`)

// notFound explains why old was not found in text: a whitespace-only
// difference, or the closest candidate lines and how they differ.
func notFound(name, text, old string) string {
	fileLines := splitLines(text)
	oldLines := splitLines(old)
	if len(oldLines) == 0 {
		oldLines = []string{old}
	}
	numbered := 0
	for _, l := range oldLines {
		if lineNumberPrefix.MatchString(l) {
			numbered++
		}
	}
	if numbered == len(oldLines) {
		return fmt.Sprintf("old_string was not found in %s: it seems to include read_file's line numbers; leave out the number and the tab at the start of each line. Nothing was changed", name)
	}
	// Whitespace-insensitive match.
	if at := wsMatch(fileLines, oldLines); at >= 0 {
		var b strings.Builder
		where := fmt.Sprintf("lines %d-%d", at+1, at+len(oldLines))
		if len(oldLines) == 1 {
			where = fmt.Sprintf("line %d", at+1)
		}
		fmt.Fprintf(&b, "old_string was not found in %s exactly, but it matches %s if whitespace is ignored. Whitespace differs (it is never fixed silently; nothing was changed):\n",
			name, where)
		for j, ol := range oldLines {
			if d := wsDiff(fileLines[at+j], ol); d != "" {
				fmt.Fprintf(&b, "  line %d: %s\n", at+j+1, d)
			}
		}
		b.WriteString("Copy the exact text from the file:\n")
		for j := range oldLines {
			if j == 30 {
				break
			}
			writeNumbered(&b, at+j+1, fileLines[at+j])
		}
		return strings.TrimRight(b.String(), "\n")
	}
	// The closest lines to the most distinctive line of old_string.
	anchor := 0
	for j, l := range oldLines {
		if len(strings.TrimSpace(l)) > len(strings.TrimSpace(oldLines[anchor])) {
			anchor = j
		}
	}
	type cand struct {
		line  int
		score float64
	}
	target := strings.TrimSpace(oldLines[anchor])
	tg := bigrams(target)
	var cands []cand
	for i, l := range fileLines {
		s := dice(tg, strings.TrimSpace(l))
		if s >= 0.5 {
			cands = append(cands, cand{i, s})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	if len(cands) == 0 {
		return fmt.Sprintf("old_string was not found in %s (%d lines), and no line is close to %q. Read the file again (read_file) and copy the exact text. Nothing was changed",
			name, len(fileLines), clip(target, 80))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "old_string was not found in %s. Nothing was changed. Closest text in the file:\n", name)
	for k, c := range cands {
		if k == 3 {
			break
		}
		from := max(c.line-anchor, 0)
		to := min(from+len(oldLines), len(fileLines))
		fmt.Fprintf(&b, "candidate %d (lines %d-%d):\n", k+1, from+1, to)
		for n := from; n < to && n < from+15; n++ {
			writeNumbered(&b, n+1, fileLines[n])
		}
		for j := 0; j < len(oldLines) && from+j < len(fileLines); j++ {
			if fileLines[from+j] != oldLines[j] {
				fl := fileLines[from+j]
				if d := wsDiff(fl, oldLines[j]); d != "" && normWS(fl) == normWS(oldLines[j]) {
					fmt.Fprintf(&b, "  first difference, line %d: %s\n", from+j+1, d)
				} else {
					fmt.Fprintf(&b, "  first difference, line %d: the file has %q where old_string has %q\n", from+j+1, clip(fl, 120), clip(oldLines[j], 120))
				}
				break
			}
		}
	}
	b.WriteString("Copy the exact text from the file into old_string")
	return b.String()
}

// normWS collapses runs of blanks and trims a line.
func normWS(s string) string { return strings.Join(strings.Fields(s), " ") }

// wsMatch finds where old's lines match the file's lines ignoring
// whitespace (the first old line may be a line's tail, the last a line's
// head); -1 when nowhere.
func wsMatch(file, old []string) int {
	n := make([]string, len(old))
	for j, l := range old {
		n[j] = normWS(l)
	}
	for i := 0; i+len(old) <= len(file); i++ {
		ok := true
		for j := range old {
			f := normWS(file[i+j])
			switch {
			case len(old) == 1:
				ok = n[j] != "" && strings.Contains(f, n[j])
			case j == 0:
				ok = strings.HasSuffix(f, n[j])
			case j == len(old)-1:
				ok = strings.HasPrefix(f, n[j])
			default:
				ok = f == n[j]
			}
			if !ok {
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// wsDiff describes how two lines equal up to whitespace differ; "" if not.
func wsDiff(fileLine, oldLine string) string {
	if fileLine == oldLine || strings.HasSuffix(fileLine, oldLine) || strings.HasPrefix(fileLine, oldLine) {
		return ""
	}
	fi := fileLine[:len(fileLine)-len(strings.TrimLeft(fileLine, " \t"))]
	oi := oldLine[:len(oldLine)-len(strings.TrimLeft(oldLine, " \t"))]
	var parts []string
	if fi != oi {
		parts = append(parts, fmt.Sprintf("the file indents with %s, old_string with %s", blanks(fi), blanks(oi)))
	}
	ft := fileLine[len(strings.TrimRight(fileLine, " \t")):]
	ot := oldLine[len(strings.TrimRight(oldLine, " \t")):]
	if ft != ot {
		parts = append(parts, fmt.Sprintf("trailing whitespace differs (file %s, old_string %s)", blanks(ft), blanks(ot)))
	}
	if strings.TrimSpace(fileLine) != strings.TrimSpace(oldLine) {
		parts = append(parts, fmt.Sprintf("spacing inside the line differs: file %q, old_string %q", clip(strings.TrimSpace(fileLine), 100), clip(strings.TrimSpace(oldLine), 100)))
	}
	return strings.Join(parts, "; ")
}

// blanks names a run of spaces and tabs: "2 tabs", "4 spaces", "nothing".
func blanks(s string) string {
	if s == "" {
		return "nothing"
	}
	tabs, spaces := strings.Count(s, "\t"), strings.Count(s, " ")
	var parts []string
	if tabs > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", tabs, plural(tabs, "tab", "tabs")))
	}
	if spaces > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", spaces, plural(spaces, "space", "spaces")))
	}
	if tabs > 0 && spaces > 0 {
		return fmt.Sprintf("%q (%s)", s, strings.Join(parts, " and "))
	}
	return strings.Join(parts, " and ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func bigrams(s string) map[string]int {
	m := make(map[string]int, len(s))
	for i := 0; i+2 <= len(s); i++ {
		m[s[i:i+2]]++
	}
	return m
}

// dice is the Sørensen–Dice similarity of s's bigrams with target's.
func dice(target map[string]int, s string) float64 {
	tn := 0
	for _, c := range target {
		tn += c
	}
	if tn == 0 || len(s) < 2 {
		return 0
	}
	used := make(map[string]int, 8)
	common := 0
	for i := 0; i+2 <= len(s); i++ {
		g := s[i : i+2]
		if used[g] < target[g] {
			used[g]++
			common++
		}
	}
	return 2 * float64(common) / float64(tn+len(s)-1)
}

// presentEditFile: "Edit a.go"; when it ends, at the first line it changed.
func presentEditFile(a *editFileArgs, res *Result) Presentation {
	p := Presentation{Title: "Edit " + a.Path, Activity: "editing " + shown(a.Path), Kind: KindEdit,
		Locations: at(a.Path, 0), Show: ShowLine}
	if res != nil {
		if out, ok := res.Data.(*EditOutput); ok && len(out.Lines) > 0 && len(p.Locations) == 1 {
			p.Locations[0].Line = out.Lines[0]
		}
	}
	return p
}
