package tools

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
	"github.com/bmatcuk/doublestar/v4"
)

type grepArgs struct {
	Pattern    string `json:"pattern" desc:"Go (RE2) regular expression, or the exact text with literal: true"`
	Path       string `json:"path,omitempty" desc:"folder or file to search (workspace-relative); default the whole workspace"`
	Glob       string `json:"glob,omitempty" desc:"only files matching this glob; without a / it matches file names at any depth (*.go, *_test.go)"`
	Literal    bool   `json:"literal,omitempty" desc:"pattern is plain text, not a regular expression"`
	IgnoreCase bool   `json:"ignore_case,omitempty" desc:"ignore upper/lower case"`
	Context    int    `json:"context,omitempty" desc:"lines of context before and after each match (at most 10)"`
	Limit      int    `json:"limit,omitempty" desc:"most matching lines to print; default 100, at most 1000"`
}

// GrepOutput is the Data of a grep Result.
type GrepOutput struct {
	Pattern   string
	Scope     string   // what was searched: "the workspace", a folder or a file, and the glob
	Files     []string // files with matches shown
	Matches   int      // matching lines shown
	Searched  int      // text files searched
	Truncated bool     // more matches exist than were shown
	// Complete: every file in scope was searched (the total cap did not
	// stop the search early), so "no more matches" is evidence.
	Complete bool
}

// grepMaxPerFile caps the matching lines shown per file.
const grepMaxPerFile = 20

func newGrep(r *Registry) Tool {
	return newTool("grep", 0, func(ctx context.Context, a *grepArgs) (Result, error) {
		return r.grep(ctx, a)
	})
}

func (r *Registry) grep(ctx context.Context, a *grepArgs) (Result, error) {
	w := r.env.Workspace
	m, err := grep.Compile(grep.Query{Pattern: a.Pattern, Literal: a.Literal, IgnoreCase: a.IgnoreCase})
	if err != nil {
		return errorf("%v", err), nil
	}
	limit := a.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	ctxLines := min(max(a.Context, 0), 10)

	// The scope: index files under path, filtered by glob.
	var paths []workspace.Path
	scope := "the workspace"
	explicitFile, whole := false, false
	if a.Path != "" && a.Path != "." {
		p, res := r.resolve(a.Path)
		if res != nil {
			return *res, nil
		}
		fi, statErr := os.Stat(w.Abs(p))
		_, open := w.Buffers().Get(w.Abs(p))
		switch {
		case statErr == nil && fi.IsDir():
			if p.String() != "." {
				scope = p.String() + "/"
				paths, err = w.Glob(escapeGlob(p.String()) + "/**")
				if err != nil {
					return Result{}, fmt.Errorf("grep: %w", err)
				}
			} else {
				whole = true
			}
		case statErr == nil || open:
			scope, explicitFile = p.String(), true
			paths = []workspace.Path{p}
			if SecretPath(p) {
				if res, err := r.approve(ctx, ApprovalRequest{Tool: "grep", Summary: secretSummary("search", p), Path: p.String(), Secret: true}); res != nil || err != nil {
					if res != nil {
						return *res, nil
					}
					return Result{}, err
				}
			}
		default:
			return errorf("no such file or folder: %s; grep with no path searches the whole workspace", p), nil
		}
	} else {
		whole = true
	}
	idx := r.env.Index
	var files []grep.File
	// A folder or the workspace is searched without the files that
	// commonly hold secrets: their lines would reach the model unasked.
	// Naming one as path asks the user first.
	var secrets []string
	var feed *grep.Feed
	var fed func() (int, []string, error)
	if whole && a.Glob == "" && !w.Listed() {
		// The workspace's files are still being listed (a task started as
		// the editor opened it): the search reads them as the walk finds
		// them instead of waiting for the whole list.
		if feed, fed, err = streamWorkspace(ctx, w, idx); err != nil {
			return Result{}, fmt.Errorf("grep: %w", err)
		}
	} else if whole && a.Glob == "" {
		// The whole workspace, the most common scope: its file list, with
		// the secret files already left out, is kept by the index from one
		// grep to the next while the workspace lists the same files, so a
		// warm grep does no work per file of the tree beyond the filter's
		// check.
		if files, secrets, err = wholeWorkspace(w, idx); err != nil {
			return Result{}, fmt.Errorf("grep: %w", err)
		}
		secrets = slices.Clone(secrets) // the kept list is shared; this one grows below
	} else if whole {
		paths = w.Files()
	}
	if a.Glob != "" {
		g := strings.TrimPrefix(a.Glob, "./")
		if !strings.Contains(g, "/") {
			g = "**/" + g
		}
		if !doublestar.ValidatePattern(g) {
			return errorf("glob %q is not a valid pattern; use doublestar syntax: *.go, **/*_test.go, src/**/*.{ts,tsx}", a.Glob), nil
		}
		kept := paths[:0:0]
		for _, p := range paths {
			if ok, _ := doublestar.Match(g, p.String()); ok {
				kept = append(kept, p)
			}
		}
		paths = kept
		scope += " (files matching " + g + ")"
	}
	if files == nil && feed == nil {
		if files, err = grepFiles(idx, paths); err != nil {
			return Result{}, fmt.Errorf("grep: %w", err)
		}
		if !explicitFile {
			files, secrets = withoutSecrets(files)
		}
	}
	if len(files) == 0 && feed == nil {
		if len(secrets) > 0 {
			return errorf("nothing was searched: the only files in %s commonly hold secrets (%s); grep with one of them as path asks the user first", scope, strings.Join(secrets, ", ")), nil
		}
		return errorf("nothing was searched: no files in %s; check path and glob (list_files shows what is there)", scope), nil
	}
	// Open buffers by printed path: one Resolve per buffer, not one
	// absolute path per file of the scope.
	var open map[string]string
	for _, name := range w.Buffers().Filenames() {
		if doc, ok := w.Buffers().Get(name); ok {
			if p, err := w.Resolve(name); err == nil {
				if open == nil {
					open = map[string]string{}
				}
				open[p.String()] = doc.Text
			}
		}
	}
	if !explicitFile && !r.env.OneShot && feed == nil {
		// The filter is built once per index, in the background, for every
		// later search of every task; this search does not wait for it.
		if err := StartGrepFilter(w, idx); err != nil {
			return Result{}, fmt.Errorf("grep: %w", err)
		}
	}
	seq := w.Seq()
	trusted := r.syncIndex()
	res, err := m.Search(ctx, grep.Request{
		Files: files, Feed: feed, Buffers: open, MaxPerFile: grepMaxPerFile, MaxTotal: limit, Context: ctxLines, Index: idx, Trusted: trusted,
	})
	if feed != nil {
		n, left, ferr := fed()
		if err == nil {
			err = ferr
		}
		secrets = left
		if err == nil && n == 0 {
			if len(secrets) > 0 {
				return errorf("nothing was searched: the only files in %s commonly hold secrets (%s); grep with one of them as path asks the user first", scope, strings.Join(secrets, ", ")), nil
			}
			return errorf("nothing was searched: no files in %s; check path and glob (list_files shows what is there)", scope), nil
		}
		if err == nil && !r.env.OneShot {
			// The list is complete now: the filter builds for later searches.
			err = StartGrepFilter(w, idx)
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("grep: %w", err)
	}
	if !trusted && idx.Warm() && res.Skipped == 0 && (a.Path == "" || a.Path == ".") && a.Glob == "" {
		idx.Synced(seq) // every file's stamp was just checked
	}
	if !explicitFile {
		// A file the name filter kept may still be a link to a secret
		// file (docs/setup.txt -> ../.env): the files that matched are
		// checked by their real target.
		kept := res.Files[:0]
		for _, f := range res.Files {
			if p, err := w.Resolve(f.Name); err == nil && SecretPath(p) {
				secrets = append(secrets, f.Name)
				for _, l := range f.Lines {
					if l.Match {
						res.Matches--
					}
				}
				continue
			}
			kept = append(kept, f)
		}
		res.Files = kept
	}
	out := renderGrep(a, scope, res, ctxLines)
	if len(secrets) > 0 {
		if len(secrets) > 5 {
			secrets = append(secrets[:5], fmt.Sprintf("and %d more", len(secrets)-5))
		}
		out.Text += fmt.Sprintf("\n(not searched: %s, which commonly hold secrets; grep with one as path, or read_file, asks the user first)", strings.Join(secrets, ", "))
	}
	return out, nil
}

// syncIndex brings the warm index up to date with the workspace change log
// and reports whether searches may trust it without checking each file on
// disk: only when the workspace watches the disk (so outside changes reach
// the log), the index was last checked against the disk after every folder
// was watched (a file changed before its folder was watched has no entry
// in the log), the log reaches back far enough, and no command ran since
// the last full check (its writes may still be in the watcher's debounce).
func (r *Registry) syncIndex() bool {
	idx, w := r.env.Index, r.env.Workspace
	if !idx.Warm() || !w.Watching() || idx.Since() < w.WatchedSince() {
		return false
	}
	if idx.TakeSuspect() {
		return false
	}
	changes, complete := w.ChangesSince(idx.Since())
	if !complete {
		return false
	}
	last := idx.Since()
	for _, c := range changes {
		idx.Forget(c.Path.String())
		last = max(last, c.Seq)
	}
	idx.Synced(last)
	return true
}

// StartGrepFilter starts building idx, the grep filter shared by every task
// on ws, in the background (a no-op while a build runs or once it is
// warm). The server may call it when a workspace opens, so the first grep
// of the first task can already skip files; grep calls it otherwise. The
// build yields to every search and stops at idx.Close.
func StartGrepFilter(ws *workspace.Workspace, idx *grep.Index) error {
	if idx.Warm() || idx.Building() {
		return nil
	}
	seq := ws.Seq()
	files, _, err := wholeWorkspace(ws, idx)
	if err != nil {
		return fmt.Errorf("grep filter: %w", err)
	}
	idx.Start(files, seq)
	return nil
}

// wholeWorkspace is the File list of every file of w a whole-workspace
// search reads, and the names of the secret files left out of it: the
// lists idx kept when w lists the same files as when they were made, else
// new ones, kept.
func wholeWorkspace(w *workspace.Workspace, idx *grep.Index) ([]grep.File, []string, error) {
	before := w.FilesVersion()
	if files, secrets := idx.KeptFiles(before); files != nil {
		return files, secrets, nil
	}
	all, err := grepFiles(idx, w.Files())
	if err != nil {
		return nil, nil, err
	}
	files, secrets := withoutSecrets(all)
	// Kept only when the list did not change while it was read.
	if slices.Equal(before, w.FilesVersion()) {
		idx.KeepFiles(before, files, secrets)
	}
	return files, secrets, nil
}

// streamHook, when set by a test, runs as a search starts on a workspace
// whose files are still being listed: the test then lets the walk go on.
var streamHook func()

// streamWorkspace starts passing the files of w a whole-workspace search
// reads to a Feed as w's walk finds them (the same files wholeWorkspace
// lists: secret files left out by name), ordered as Files orders them.
// wait waits for the last file and returns how many were fed and the
// names of the secret files left out, in that order.
func streamWorkspace(ctx context.Context, w *workspace.Workspace, idx *grep.Index) (feed *grep.Feed, wait func() (int, []string, error), err error) {
	rank := map[*grep.Root]int{}
	for i, dir := range w.Roots() {
		rt, err := idx.Root(dir)
		if err != nil {
			return nil, nil, err
		}
		rank[rt] = i
	}
	less := func(a, b *grep.File) bool {
		if ra, rb := rank[a.Root], rank[b.Root]; ra != rb {
			return ra < rb
		}
		return a.Rel < b.Rel
	}
	feed = grep.NewFeed(less)
	var (
		n        int
		left     []grep.File
		listErr  error
		done     = make(chan struct{})
		addFiles = func(ps []workspace.Path) {
			if listErr != nil {
				return
			}
			all, err := grepFiles(idx, ps)
			if err != nil {
				listErr = err
				return
			}
			kept := all[:0]
			for _, f := range all {
				if SecretFile(f.Rel) {
					left = append(left, f)
				} else {
					kept = append(kept, f)
				}
			}
			n += len(kept)
			feed.Add(kept)
		}
	)
	if streamHook != nil {
		streamHook()
	}
	go func() {
		defer close(done)
		defer feed.Close()
		if err := w.StreamFiles(ctx, addFiles); err != nil && listErr == nil {
			listErr = err
		}
	}()
	return feed, func() (int, []string, error) {
		<-done
		slices.SortFunc(left, func(a, b grep.File) int {
			switch {
			case less(&a, &b):
				return -1
			case less(&b, &a):
				return 1
			}
			return 0
		})
		names := make([]string, len(left))
		for i, f := range left {
			names[i] = f.Name
		}
		return n, names, listErr
	}, nil
}

// withoutSecrets is files without the ones that commonly hold secrets (by
// name: SecretFile), and the names of those.
func withoutSecrets(files []grep.File) (kept []grep.File, secrets []string) {
	kept = make([]grep.File, 0, len(files))
	for _, f := range files {
		if SecretFile(f.Rel) {
			secrets = append(secrets, f.Name)
			continue
		}
		kept = append(kept, f)
	}
	return kept, secrets
}

// grepFiles names paths for the search engine: printed name, root handle
// and root-relative path.
func grepFiles(idx *grep.Index, paths []workspace.Path) ([]grep.File, error) {
	files := make([]grep.File, len(paths))
	var dir string
	var root *grep.Root
	for i, p := range paths {
		if p.Root() != dir || root == nil {
			var err error
			if root, err = idx.Root(p.Root()); err != nil {
				return nil, err
			}
			dir = p.Root()
		}
		name := p.String()
		files[i] = grep.File{Name: name, Root: root, Rel: p.Rel()}
	}
	return files, nil
}

func renderGrep(a *grepArgs, scope string, res *grep.Result, ctxLines int) Result {
	out := &GrepOutput{Pattern: a.Pattern, Scope: scope, Matches: res.Matches, Searched: res.Searched, Truncated: res.Truncated, Complete: res.Skipped == 0}
	what := fmt.Sprintf("%q", a.Pattern)
	if a.Literal {
		what = "text " + what
	}
	if a.IgnoreCase {
		what += " (ignoring case)"
	}
	var notes []string
	if res.Binary > 0 {
		notes = append(notes, fmt.Sprintf("%d binary %s skipped", res.Binary, plural(res.Binary, "file", "files")))
	}
	if res.Errors > 0 {
		notes = append(notes, fmt.Sprintf("%d %s unreadable (%v)", res.Errors, plural(res.Errors, "file", "files"), res.FirstErr))
	}
	note := ""
	if len(notes) > 0 {
		note = "; " + strings.Join(notes, "; ")
	}
	if res.Matches == 0 && res.Searched == 0 {
		// Not a "no": nothing was read, so nothing is known.
		out.Complete = false
		text := fmt.Sprintf("nothing was searched for %s in %s: no file there could be read as text%s", what, scope, note)
		return Result{Text: text, IsError: true, Data: out, Evidence: "grep " + text}
	}
	if res.Matches == 0 {
		text := fmt.Sprintf("no matches for %s in %d %s searched in %s%s", what, res.Searched, plural(res.Searched, "file", "files"), scope, note)
		return Result{Text: text, Data: out, Evidence: "grep " + text}
	}
	var b strings.Builder
	for fi, f := range res.Files {
		out.Files = append(out.Files, f.Name)
		if ctxLines > 0 && fi > 0 {
			b.WriteString("--\n")
		}
		prev := 0
		for _, l := range f.Lines {
			if ctxLines > 0 && prev > 0 && l.Num > prev+1 {
				b.WriteString("--\n")
			}
			prev = l.Num
			sep := "-"
			if l.Match {
				sep = ":"
			}
			fmt.Fprintf(&b, "%s%s%d%s %s", f.Name, sep, l.Num, sep, l.Text)
			if l.Cut > 0 {
				fmt.Fprintf(&b, " … [line cut: %d more bytes]", l.Cut)
			}
			b.WriteByte('\n')
		}
		if f.More {
			fmt.Fprintf(&b, "%s: more matching lines not shown (at most %d per file; grep with path=%q to see them)\n", f.Name, grepMaxPerFile, f.Name)
		}
	}
	summary := fmt.Sprintf("%d matching %s in %d %s (%d %s searched in %s%s)",
		res.Matches, plural(res.Matches, "line", "lines"), len(res.Files), plural(len(res.Files), "file", "files"),
		res.Searched, plural(res.Searched, "file", "files"), scope, note)
	if res.Truncated {
		summary += "; more matches exist: narrow with path or glob, or raise limit"
	}
	b.WriteString("(" + summary + ")")
	return Result{Text: b.String(), Files: out.Files, Data: out, Evidence: fmt.Sprintf("grep %s: %s", what, summary)}
}

// presentGrep: "Search `pattern`"; when it ends, the files it matched.
func presentGrep(a *grepArgs, res *Result) Presentation {
	p := Presentation{Title: "Search `" + a.Pattern + "`", Activity: "searching for " + shown(a.Pattern), Kind: KindSearch,
		Locations: at(a.Path, 0)}
	if a.Path != "" {
		p.Activity += " in " + shown(a.Path)
	}
	if res != nil {
		if out, ok := res.Data.(*GrepOutput); ok {
			p.Locations = []Location{}
			for _, f := range out.Files {
				p.Locations = append(p.Locations, Location{Path: f})
			}
		}
	}
	return p
}
