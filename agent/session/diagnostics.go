package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Diagnostic is one problem the editor's language servers report.
type Diagnostic struct {
	Path     string // workspace-relative
	Line     int    // 1-based
	Severity int    // 1 error, 2 warning, 3 information, 4 hint
	Message  string
	Source   string
}

func (d Diagnostic) String() string {
	s := fmt.Sprintf("%s:%d: %s", d.Path, d.Line, d.Message)
	if d.Source != "" {
		s += " (" + d.Source + ")"
	}
	return s
}

// key identifies a diagnostic across edits that move it: its file, text
// and source, not its line.
func (d Diagnostic) key() string { return d.Path + "\x00" + d.Source + "\x00" + d.Message }

// DiagnosticsSource shares the diagnostics language servers publish: a
// Port (the editor's), or agentls's own language servers.
type DiagnosticsSource interface {
	// Diagnostics returns the diagnostics of paths (workspace-relative) and,
	// per path, the document version they are for (0: unknown;
	// VersionUnchecked: no language server reports diagnostics for it, so
	// there is nothing to wait for).
	Diagnostics(ctx context.Context, paths []string) (diags []Diagnostic, versions map[string]int32, err error)
}

// VersionUnchecked, as a path's version from DiagnosticsSource, says that
// nothing checks the file: no language server of the editor reports
// diagnostics for it (the editor said so, or an earlier edit's wait saw
// none).
const VersionUnchecked int32 = -1

// DiagnosticsDelta is what a task did to the editor's errors: the errors
// in the files it edited that were not there before its first edit of the
// file, and those that were and are gone.
type DiagnosticsDelta struct {
	Introduced []Diagnostic
	Fixed      []Diagnostic
	// Unchecked are the edited files no language server checks: nothing
	// is known of their errors.
	Unchecked []string
	checked   int // edited files a language server checks
}

// How long an edit waits for the language server's diagnostics of the
// document's new version, and how often it asks.
const (
	diagnosticsWait = 3 * time.Second
	diagnosticsPoll = 250 * time.Millisecond
)

// diagnostics keeps one task's view of the editor's errors: a baseline per
// file taken before the task's first edit of it, and the latest after.
type diagnostics struct {
	ws *workspace.Workspace

	mu        sync.Mutex // guards the fields below
	src       DiagnosticsSource
	fallback  DiagnosticsSource // agentls's own servers, once src shares none; nil: none
	off       bool              // neither shares any: stop asking
	baseline  map[string][]Diagnostic
	latest    map[string][]Diagnostic
	unchecked map[string]bool // edited files nothing checks
}

// newDiagnostics follows the editor's diagnostics (Port.Diagnostics), or
// fallback's (agentls's own language servers; nil: none) once the port
// answers ErrUnsupported.
func newDiagnostics(port Port, ws *workspace.Workspace, fallback DiagnosticsSource) *diagnostics {
	return &diagnostics{src: port, fallback: fallback, ws: ws, baseline: map[string][]Diagnostic{}, latest: map[string][]Diagnostic{}, unchecked: map[string]bool{}}
}

func errorsOnly(ds []Diagnostic) []Diagnostic {
	var out []Diagnostic
	for _, d := range ds {
		if d.Severity == 1 {
			out = append(out, d)
		}
	}
	return out
}

// fetch asks the editor for path's errors; ok is false when it shares none.
func (d *diagnostics) fetch(ctx context.Context, path string) ([]Diagnostic, int32, bool) {
	ds, v, ok := d.fetchAll(ctx, path)
	return errorsOnly(ds), v, ok
}

// fetchWithAll is fetch, with every diagnostic (any severity) too.
func (d *diagnostics) fetchWithAll(ctx context.Context, path string) (errs []Diagnostic, version int32, all []Diagnostic, ok bool) {
	all, version, ok = d.fetchAll(ctx, path)
	return errorsOnly(all), version, all, ok
}

// fetchAll asks the editor for every diagnostic of path.
func (d *diagnostics) fetchAll(ctx context.Context, path string) ([]Diagnostic, int32, bool) {
	d.mu.Lock()
	off, src := d.off, d.src
	d.mu.Unlock()
	if off {
		return nil, 0, false
	}
	ds, versions, err := src.Diagnostics(ctx, []string{path})
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			d.mu.Lock()
			if d.fallback != nil {
				// A plain client: agentls's own servers instead.
				d.src, d.fallback = d.fallback, nil
				d.mu.Unlock()
				return d.fetchAll(ctx, path)
			}
			d.off = true
			d.mu.Unlock()
		}
		return nil, 0, false
	}
	return ds, versions[path], true
}

// before takes the baseline of path at the task's first edit of it.
func (d *diagnostics) before(ctx context.Context, path string) {
	d.mu.Lock()
	_, have := d.baseline[path]
	d.mu.Unlock()
	if have {
		return
	}
	if ds, version, ok := d.fetch(ctx, path); ok {
		d.mu.Lock()
		if version == VersionUnchecked {
			d.unchecked[path] = true
		} else {
			d.baseline[path] = ds
		}
		d.mu.Unlock()
	}
}

// after waits (bounded) for the diagnostics of path's new text and returns
// the errors that are not in its baseline.
func (d *diagnostics) after(ctx context.Context, path string) []Diagnostic {
	d.mu.Lock()
	base, have := d.baseline[path]
	d.mu.Unlock()
	if !have {
		return nil
	}
	want := int32(0)
	if p, err := d.ws.Resolve(path); err == nil {
		if doc, ok := d.ws.Buffers().Get(d.ws.Abs(p)); ok {
			want = doc.Version
		}
	}
	deadline := time.Now().Add(diagnosticsWait)
	var last []Diagnostic
	for {
		ds, version, _, ok := d.fetchWithAll(ctx, path)
		if !ok {
			return nil
		}
		if version == VersionUnchecked {
			d.mu.Lock()
			d.unchecked[path] = true
			delete(d.baseline, path)
			d.mu.Unlock()
			return nil
		}
		last = ds
		d.mu.Lock()
		f, isFresh := d.src.(interface{ fresh() bool })
		d.mu.Unlock()
		if isFresh && f.fresh() {
			break // the answer is for the new text already
		}
		// The language server has answered for the new text when it names
		// the version, or, without versions, when what it reports changed.
		if want > 0 && version >= want || version == 0 && !sameKeys(ds, d.latestOr(path, base)) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			// Nothing at all, no version, no change: a clean file and a
			// file nothing checks look the same here, so the next edit
			// waits again (only a client's checked: false skips waits).
			break
		}
		time.Sleep(diagnosticsPoll)
	}
	d.mu.Lock()
	d.latest[path] = last
	d.mu.Unlock()
	return minus(last, base)
}

func (d *diagnostics) latestOr(path string, base []Diagnostic) []Diagnostic {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.latest[path]; ok {
		return l
	}
	return base
}

// delta is what the task did to the errors of the files it edited.
func (d *diagnostics) delta() *DiagnosticsDelta {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.latest) == 0 && len(d.unchecked) == 0 {
		return nil
	}
	out := &DiagnosticsDelta{}
	for p := range d.unchecked {
		out.Unchecked = append(out.Unchecked, p)
	}
	sort.Strings(out.Unchecked)
	paths := make([]string, 0, len(d.latest))
	for p := range d.latest {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out.checked = len(paths)
	for _, p := range paths {
		out.Introduced = append(out.Introduced, minus(d.latest[p], d.baseline[p])...)
		out.Fixed = append(out.Fixed, minus(d.baseline[p], d.latest[p])...)
	}
	return out
}

// minus is a without the diagnostics of b (by key, counting repeats).
func minus(a, b []Diagnostic) []Diagnostic {
	n := map[string]int{}
	for _, d := range b {
		n[d.key()]++
	}
	var out []Diagnostic
	for _, d := range a {
		if n[d.key()] > 0 {
			n[d.key()]--
			continue
		}
		out = append(out, d)
	}
	return out
}

func sameKeys(a, b []Diagnostic) bool { return len(minus(a, b)) == 0 && len(minus(b, a)) == 0 }

// diagnosticsTool is an edit tool whose result tells the model the errors
// its edit introduced, as the editor's language servers see them.
type diagnosticsTool struct {
	tools.Tool
	d *diagnostics
}

func (t diagnosticsTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(args, &a)
	path := ""
	if p, err := t.d.ws.Resolve(a.Path); err == nil {
		path = p.String()
		t.d.before(ctx, path)
	}
	res, err := t.Tool.Run(ctx, args)
	if err != nil || res.IsError || path == "" {
		return res, err
	}
	if added := t.d.after(ctx, path); len(added) > 0 {
		lines := make([]string, len(added))
		for i, d := range added {
			lines[i] = "- " + d.String()
		}
		res.Text += fmt.Sprintf("\nThe editor reports %d new error(s) after this edit (errors that were there before are not listed):\n%s", len(added), strings.Join(lines, "\n"))
	}
	return res, nil
}

// fixCheck is the gate of a "Fix with agent" task: it passes only when the
// diagnostic the task was started for is gone from the editor's view (then
// the check command, if any, runs).
type fixCheck struct {
	next   agent.Checker // nil: none
	d      *diagnostics
	path   string
	target agent.Diagnostic
}

func (c fixCheck) Check(ctx context.Context) (bool, string, error) {
	ds, _, ok := c.d.fetchAll(ctx, c.path)
	if ok {
		for _, d := range ds {
			if d.Message == c.target.Message {
				return false, fmt.Sprintf("The editor still reports the problem this task was started for: %s:%d: %s. Fix it, or say why it cannot be fixed.", c.path, d.Line, d.Message), nil
			}
		}
	}
	if c.next == nil {
		return true, "", nil
	}
	return c.next.Check(ctx)
}

// checkedCount is how many edited files a language server checks (set
// by delta: files with a baseline).
func (d *DiagnosticsDelta) checkedCount() int { return d.checked }

// diagnosticsSection is the report's list of the errors a task introduced
// and fixed.
func diagnosticsSection(d *DiagnosticsDelta) string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Editor diagnostics\n\n")
	if len(d.Unchecked) > 0 {
		fmt.Fprintf(&b, "Not checked: no language server reports diagnostics for %s, so nothing is known of its errors.\n", strings.Join(d.Unchecked, ", "))
	}
	if len(d.Introduced) == 0 && len(d.Fixed) == 0 {
		if checked := d.checkedCount(); checked > 0 {
			b.WriteString("No error introduced or fixed in the files the task edited and the editor checks.\n")
		}
		return b.String()
	}
	for _, x := range []struct {
		title string
		ds    []Diagnostic
	}{{"Errors introduced", d.Introduced}, {"Errors fixed", d.Fixed}} {
		if len(x.ds) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s:\n", x.title)
		for _, e := range x.ds {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	return b.String()
}
