package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentls/agentls/workspace"
)

type listFilesArgs struct {
	Pattern string `json:"pattern,omitempty" desc:"glob over workspace-relative paths (doublestar: **, {a,b}, [a-z]); default **/*; without a / it matches file names at any depth (*.go finds nested files)"`
	Path    string `json:"path,omitempty" desc:"folder to list (workspace-relative); default the whole workspace"`
	Limit   int    `json:"limit,omitempty" desc:"most paths to print; default 200, at most 2000"`
}

// ListFilesOutput is the Data of a list_files Result.
type ListFilesOutput struct {
	Pattern string   // the glob actually matched, relative to the workspace
	Total   int      // files matching
	Paths   []string // the ones printed
}

func newListFiles(r *Registry) Tool {
	return newTool("list_files", 0, func(ctx context.Context, a *listFilesArgs) (Result, error) {
		return r.listFiles(ctx, a)
	})
}

// globFor turns a tool's pattern and folder into one workspace glob. A
// pattern without "/" matches base names at any depth.
func globFor(pattern, folder string) string {
	pattern = strings.TrimPrefix(strings.TrimSpace(pattern), "./")
	if pattern == "" || pattern == "." {
		pattern = "**/*"
	}
	if !strings.Contains(pattern, "/") {
		pattern = "**/" + pattern
	}
	if folder == "" || folder == "." {
		return pattern
	}
	return escapeGlob(folder) + "/" + pattern
}

// escapeGlob quotes the glob metacharacters of a literal path.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]{}\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r *Registry) listFiles(ctx context.Context, a *listFilesArgs) (Result, error) {
	w := r.env.Workspace
	limit := a.Limit
	if limit <= 0 {
		limit = 200
	}
	limit = min(limit, 2000)
	folder := ""
	if a.Path != "" && a.Path != "." {
		p, res := r.resolve(a.Path)
		if res != nil {
			return *res, nil
		}
		fi, err := w.Stat(p)
		switch {
		case err != nil:
			return errorf("no such folder: %s; list_files with no path lists the whole workspace", p), nil
		case !fi.IsDir():
			return Result{Text: p.String() + "\n(1 file: path names a file, not a folder)", Files: []string{p.String()},
				Data: &ListFilesOutput{Pattern: p.String(), Total: 1, Paths: []string{p.String()}}}, nil
		}
		if p.String() != "." {
			folder = p.String()
		}
	}
	if strings.HasPrefix(a.Pattern, "/") || strings.Contains("/"+a.Pattern+"/", "/../") {
		return errorf("pattern %q can never match: patterns are matched against workspace-relative paths such as \"src/main.go\"; drop the leading / or ..", a.Pattern), nil
	}
	glob := globFor(a.Pattern, folder)
	paths, err := w.Glob(glob)
	if err != nil {
		switch {
		case errors.Is(err, workspace.ErrBadPattern):
			return errorf("pattern %q can never match: %v. Use doublestar syntax: *.go, **/*_test.go, src/**/*.{ts,tsx}", a.Pattern, err), nil
		case errors.Is(err, workspace.ErrOutside):
			return errorf("pattern %q can never match: %v", a.Pattern, err), nil
		}
		return Result{}, fmt.Errorf("list_files: %w", err)
	}
	out := &ListFilesOutput{Pattern: glob, Total: len(paths)}
	if len(paths) == 0 {
		return Result{Text: r.noFilesText(a.Pattern, glob, folder), Data: out,
			Evidence: fmt.Sprintf("list_files %s: no files", glob)}, nil
	}
	var b strings.Builder
	shown := 0
	for _, p := range paths {
		if shown == limit {
			break
		}
		// The index may briefly list names that a folder swapped for a
		// link has led to; print only what is inside the workspace now.
		// A one-shot process listed the tree itself a moment ago: one
		// check per name through the root would cost more than the walk.
		if !r.env.OneShot && !w.Exists(p) {
			out.Total--
			continue
		}
		shown++
		b.WriteString(p.String())
		b.WriteByte('\n')
		out.Paths = append(out.Paths, p.String())
	}
	if shown == 0 {
		out.Paths = nil
		return Result{Text: r.noFilesText(a.Pattern, glob, folder), Data: out,
			Evidence: fmt.Sprintf("list_files %s: no files", glob)}, nil
	}
	if out.Total > shown {
		fmt.Fprintf(&b, "(showing %d of %d files matching %s; %d more: narrow with path or pattern, or raise limit)", shown, out.Total, glob, out.Total-shown)
	} else {
		fmt.Fprintf(&b, "(%d %s matching %s)", out.Total, plural(out.Total, "file", "files"), glob)
	}
	return Result{Text: b.String(), Data: out,
		Evidence: fmt.Sprintf("list_files %s: %d files", glob, out.Total)}, nil
}

// noFilesText explains an empty listing with what is there instead.
func (r *Registry) noFilesText(pattern, glob, folder string) string {
	where := "the workspace"
	if folder != "" {
		where = folder + "/"
	}
	all, _ := r.env.Workspace.Glob(globFor("", folder))
	if len(all) == 0 {
		return fmt.Sprintf("no files match %s: %s holds no indexed files (ignored files and .agentls/ are not listed)", glob, where)
	}
	var eg []string
	for i := 0; i < len(all) && len(eg) < 5; i++ {
		if r.env.Workspace.Exists(all[i]) {
			eg = append(eg, all[i].String())
		}
	}
	if len(eg) == 0 {
		return fmt.Sprintf("no files match %s: %s holds no indexed files (ignored files and .agentls/ are not listed)", glob, where)
	}
	return fmt.Sprintf("no files match %s in %s (it holds %d files, e.g. %s). The search was recursive; check the pattern's spelling and case",
		glob, where, len(all), strings.Join(eg, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// presentListFiles: "List src", a read of the folder.
func presentListFiles(a *listFilesArgs, _ *Result) Presentation {
	what := a.Pattern
	if what == "" {
		what = a.Path
	}
	p := Presentation{Title: "List files", Activity: "listing files", Kind: KindRead, Locations: at(a.Path, 0)}
	if what != "" {
		p.Title, p.Activity = "List "+what, "listing "+shown(what)
	}
	return p
}
