package langserver

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Env is what the language tools of one task act on and through.
type Env struct {
	Workspace *workspace.Workspace
	// Editor applies rename_symbol's edit (the task's editor: versioned,
	// recorded for undo); nil means Workspace.DiskEditor().
	Editor workspace.Editor
	// Approver is asked before a rename writes files not open in the
	// editor; nil allows.
	Approver tools.Approver
	Source   Source
}

//go:embed *.md
var descFS embed.FS

func description(name string) string {
	b, err := descFS.ReadFile(name + ".md")
	if err != nil {
		panic("langserver: no description file for " + name)
	}
	return strings.TrimSpace(string(b))
}

// MaxReferences bounds the references and callers listed; the rest are
// counted.
const MaxReferences = 60

// MaxLocations bounds the locations of one answer that are kept (read,
// sorted, given to the editor); the rest are only counted.
const MaxLocations = 2000

// MaxHover bounds the hover text given to the model; a longer one is cut
// with a note of what was cut.
const MaxHover = 8 << 10

// Tools returns definition, references, hover, symbols, rename_symbol,
// implementations and callers over env.Source.
func Tools(env Env) []tools.Tool {
	if env.Editor == nil {
		env.Editor = env.Workspace.DiskEditor()
	}
	t := &toolset{env: env}
	return []tools.Tool{
		tools.Presenting(tools.Define("definition", 0, description("definition"), t.definition), presentSymbol("definition")),
		tools.Presenting(tools.Define("references", 0, description("references"), t.references), presentSymbol("references")),
		tools.Presenting(tools.Define("hover", 0, description("hover"), t.hover), presentSymbol("hover")),
		tools.Presenting(tools.Define("symbols", 0, description("symbols"), t.symbols), presentSymbols),
		tools.Presenting(tools.Define("rename_symbol", tools.WritesFiles, description("rename_symbol"), t.rename), presentRename),
		tools.Presenting(tools.Define("implementations", 0, description("implementations"), t.implementations), presentSymbol("implementations")),
		tools.Presenting(tools.Define("callers", 0, description("callers"), t.callers), presentSymbol("callers")),
	}
}

// presentSymbol describes a question about one symbol: "references of
// Total in a.go"; when it ends, its answer's first line, which names the
// server and counts what it found.
func presentSymbol(what string) func(a *symbolArgs, res *tools.Result) tools.Presentation {
	return func(a *symbolArgs, res *tools.Result) tools.Presentation {
		line := what + " of " + a.Symbol + " in " + a.File
		return tools.Presentation{Title: strings.ToUpper(line[:1]) + line[1:], Activity: line, Kind: tools.KindSearch,
			Locations: fileAt(a.File, a.Line), Outcome: outcome(res)}
	}
}

func presentSymbols(a *symbolsArgs, res *tools.Result) tools.Presentation {
	p := tools.Presentation{Title: "Symbols " + a.Query, Activity: "looking up symbols " + a.Query, Kind: tools.KindSearch,
		Locations: fileAt(a.File, 0), Outcome: outcome(res)}
	return p
}

func presentRename(a *renameArgs, res *tools.Result) tools.Presentation {
	return tools.Presentation{Title: "Rename " + a.Symbol + " to " + a.NewName, Activity: "renaming " + a.Symbol + " to " + a.NewName,
		Kind: tools.KindEdit, Locations: fileAt(a.File, a.Line), Outcome: outcome(res)}
}

// outcome is the first line of a successful answer: what the server
// found, and which server.
func outcome(res *tools.Result) string {
	if res == nil || res.IsError {
		return ""
	}
	s, _, _ := strings.Cut(strings.TrimSpace(res.Text), "\n")
	return strings.TrimSpace(s)
}

func fileAt(file string, line int) []tools.Location {
	if file == "" {
		return nil
	}
	return []tools.Location{{Path: file, Line: max(line, 0)}}
}

type toolset struct{ env Env }

// symbolArgs address a symbol by name, not by offset.
type symbolArgs struct {
	File   string `json:"file" desc:"the file where the symbol is declared or used (workspace-relative path)"`
	Symbol string `json:"symbol" desc:"the symbol's name as written in the file, e.g. Total or Greet"`
	Line   int    `json:"line,omitempty" desc:"1-based line of the symbol, only when the name occurs for different symbols in the file"`
}

func errorf(format string, a ...any) tools.Result {
	return tools.Result{IsError: true, Text: fmt.Sprintf(format, a...)}
}

// failed turns a server failure into a result the model reads: what
// failed, and that grep and read_file still work.
func failed(err error) (tools.Result, error) {
	if errors.Is(err, context.Canceled) {
		return tools.Result{}, err
	}
	return errorf("%v. Use grep and read_file instead.", err), nil
}

// target is a symbol found in a file.
type target struct {
	path   workspace.Path
	abs    string
	text   string
	pos    workspace.Position
	line   int // 1-based
	server string
}

func (t target) docPos() map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": uri.File(t.abs)}, "position": t.pos}
}

// locate finds a's symbol in its file: the one declaration of that name
// the server lists (documentSymbol), else its first use outside comments;
// a name declared more than once needs a line.
func (t *toolset) locate(ctx context.Context, a *symbolArgs) (*target, *tools.Result, error) {
	ws := t.env.Workspace
	name := strings.TrimSpace(a.Symbol)
	if name == "" {
		r := errorf("symbol is empty: give the symbol's name, e.g. \"Total\"")
		return nil, &r, nil
	}
	p, err := ws.Resolve(a.File)
	if err != nil {
		r := errorf("file %q: %v", a.File, err)
		return nil, &r, nil
	}
	f, err := ws.ReadFile(ctx, p)
	if err != nil {
		r := errorf("file %s: %v", p, err)
		return nil, &r, nil
	}
	tg := &target{path: p, abs: ws.Abs(p), text: f.Text}
	// The symbol's last component: "T.Method" and "pkg.Func" name Method
	// and Func.
	short := name
	if i := strings.LastIndexByte(short, '.'); i >= 0 && i < len(short)-1 {
		short = short[i+1:]
	}
	occ := occurrences(f.Text, short)
	if a.Line > 0 {
		occ = slices.DeleteFunc(occ, func(o int) bool { return lineAt(f.Text, o) != a.Line })
		if len(occ) == 0 {
			r := errorf("%s is not on line %d of %s; leave line out, or use symbols to find it", short, a.Line, p)
			return nil, &r, nil
		}
	}
	if len(occ) == 0 {
		r := errorf("%s does not occur in %s as a name; find the file that declares or uses it (symbols with query %q, or grep)", short, p, short)
		return nil, &r, nil
	}
	lines := map[int]bool{}
	for _, o := range occ {
		lines[lineAt(f.Text, o)] = true
	}
	off := -1
	if len(lines) > 1 {
		var syms []documentSymbol
		server, err := t.env.Source.Request(ctx, tg.abs, f.Text, "textDocument/documentSymbol",
			map[string]any{"textDocument": map[string]any{"uri": uri.File(tg.abs)}}, &syms)
		tg.server = server
		if err != nil {
			res, gerr := failed(err)
			return nil, &res, gerr
		}
		var decl []documentSymbol
		walkSymbols(syms, func(s documentSymbol, _ string) {
			if s.Name == short || strings.HasSuffix(s.Name, "."+short) || strings.HasSuffix(s.Name, ")."+short) {
				decl = append(decl, s)
			}
		})
		switch {
		case len(decl) == 1:
			r := symbolRange(decl[0])
			if o, err := workspace.OffsetOf(f.Text, workspace.Position(r.Start)); err == nil {
				// The selection range starts at the name, or at a receiver
				// before it: the name's first occurrence from there.
				for _, x := range occ {
					if x >= o {
						off = x
						break
					}
				}
			}
		case len(decl) > 1:
			var where []string
			for _, d := range decl {
				where = append(where, fmt.Sprintf("line %d (%s)", symbolRange(d).Start.Line+1, kindName(d.Kind)))
			}
			r := errorf("%s is declared %d times in %s: %s. Call again with line set to the one you mean", short, len(decl), p, strings.Join(where, ", "))
			return nil, &r, nil
		}
	}
	if off < 0 {
		for _, o := range occ {
			if !inComment(f.Text, o) && !inString(f.Text, o) {
				off = o
				break
			}
		}
		if off < 0 {
			off = occ[0]
		}
	}
	tg.pos = workspace.PositionOf(f.Text, off)
	tg.line = lineAt(f.Text, off)
	return tg, nil, nil
}

func symbolRange(s documentSymbol) workspace.Range {
	if s.SelectionRange != nil {
		return *s.SelectionRange
	}
	if s.Location != nil {
		return s.Location.Range
	}
	return s.Range
}

func walkSymbols(syms []documentSymbol, fn func(s documentSymbol, container string)) {
	var walk func([]documentSymbol, string)
	walk = func(ss []documentSymbol, container string) {
		for _, s := range ss {
			c := container
			if s.ContainerName != "" {
				c = s.ContainerName
			}
			fn(s, c)
			walk(s.Children, s.Name)
		}
	}
	walk(syms, "")
}

func isIdent(b byte) bool {
	return b == '_' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// occurrences are the byte offsets of name as a whole word in text.
func occurrences(text, name string) []int {
	var out []int
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return out
		}
		o := i + j
		end := o + len(name)
		if (o == 0 || !isIdent(text[o-1])) && (end >= len(text) || !isIdent(text[end])) {
			out = append(out, o)
		}
		i = o + len(name)
	}
}

func lineAt(text string, off int) int { return strings.Count(text[:off], "\n") + 1 }

// inComment is a guess, for choosing among uses only: off is after a line
// comment marker on its line.
func inComment(text string, off int) bool {
	start := strings.LastIndexByte(text[:off], '\n') + 1
	before := text[start:off]
	t := strings.TrimSpace(before)
	return strings.Contains(before, "//") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "*") || strings.HasPrefix(t, "/*")
}

// inString is a guess, for choosing among uses only: off is inside a
// quoted string on its line (an odd number of unescaped quotes before it).
func inString(text string, off int) bool {
	start := strings.LastIndexByte(text[:off], '\n') + 1
	for _, q := range []byte{'"', '\'', '`'} {
		n := 0
		for i := start; i < off; i++ {
			if text[i] == q && (i == start || text[i-1] != '\\') {
				n++
			}
		}
		if n%2 == 1 {
			return true
		}
	}
	return false
}

// Ref is one location of a result, for the editor and the report.
type Ref struct {
	Path string `json:"path"` // workspace-relative, or absolute outside the workspace
	Line int    `json:"line"` // 1-based
	Col  int    `json:"col"`  // 1-based, in UTF-16 units
	Text string `json:"text"` // the line, trimmed
}

// Answer is the structured Data of the read-only tools.
type Answer struct {
	Server string `json:"server"`
	Symbol string `json:"symbol"`
	Refs   []Ref  `json:"refs,omitempty"`
	Total  int    `json:"total"`
	Files  int    `json:"files"`
}

// lines reads files once per call.
type lines struct {
	ctx   context.Context
	ws    *workspace.Workspace
	cache map[string][]string
}

// ref turns a location into a Ref with its line text.
func (l *lines) ref(loc Location) Ref {
	abs := loc.URI.Path()
	r := Ref{Path: abs, Line: int(loc.Range.Start.Line) + 1, Col: int(loc.Range.Start.Character) + 1}
	p, err := l.ws.Resolve(abs)
	if err == nil {
		r.Path = p.String()
	}
	ls, ok := l.cache[abs]
	if !ok {
		if err == nil {
			if f, err := l.ws.ReadFile(l.ctx, p); err == nil {
				ls = strings.Split(f.Text, "\n")
			}
		}
		l.cache[abs] = ls
	}
	if i := int(loc.Range.Start.Line); i < len(ls) {
		r.Text = strings.TrimSpace(strings.TrimSuffix(ls[i], "\r"))
	}
	return r
}

func (t *toolset) lines(ctx context.Context) *lines {
	return &lines{ctx: ctx, ws: t.env.Workspace, cache: map[string][]string{}}
}

// grouped renders refs by file, at most max, with a count of the rest;
// total counts the locations not kept as well.
func grouped(refs []Ref, max, total int) string {
	var b strings.Builder
	last := ""
	for i, r := range refs {
		if i == max {
			rest := map[string]bool{}
			for _, x := range refs[i:] {
				rest[x.Path] = true
			}
			if total > len(refs) {
				fmt.Fprintf(&b, "... and %d more not listed (%d of them in %d file(s) were read; the server's other %d were only counted)\n", total-i, len(refs)-i, len(rest), total-len(refs))
			} else {
				fmt.Fprintf(&b, "... and %d more in %d file(s) not listed\n", len(refs)-i, len(rest))
			}
			break
		}
		if r.Path != last {
			fmt.Fprintf(&b, "%s\n", r.Path)
			last = r.Path
		}
		fmt.Fprintf(&b, "  %d: %s\n", r.Line, r.Text)
	}
	return strings.TrimRight(b.String(), "\n")
}

func sortRefs(refs []Ref) {
	sort.SliceStable(refs, func(i, j int) bool {
		if refs[i].Path != refs[j].Path {
			return refs[i].Path < refs[j].Path
		}
		if refs[i].Line != refs[j].Line {
			return refs[i].Line < refs[j].Line
		}
		return refs[i].Col < refs[j].Col
	})
}

func fileCount(refs []Ref) int {
	seen := map[string]bool{}
	for _, r := range refs {
		seen[r.Path] = true
	}
	return len(seen)
}

func refPaths(refs []Ref) []string {
	var out []string
	for _, r := range refs {
		if !filepath.IsAbs(r.Path) && !slices.Contains(out, r.Path) {
			out = append(out, r.Path)
		}
	}
	return out
}

// decodeLocations reads a Location, []Location or []LocationLink result:
// the first max locations, and how many there are in all (the rest are
// decoded one by one and dropped, never held together).
func decodeLocations(raw json.RawMessage, max int) ([]Location, int) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, 0
	}
	if raw[0] == '{' {
		var l Location
		if json.Unmarshal(raw, &l) == nil {
			return []Location{l}, 1
		}
		return nil, 0
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, 0
	}
	var out []Location
	total := 0
	for dec.More() {
		if total >= max {
			var skip struct{}
			if dec.Decode(&skip) != nil {
				break
			}
			total++
			continue
		}
		var it struct {
			Location
			locationLink
		}
		if dec.Decode(&it) != nil {
			break
		}
		total++
		if it.URI == "" && it.TargetURI != "" {
			out = append(out, Location{URI: it.TargetURI, Range: it.TargetSelectionRange})
			continue
		}
		out = append(out, it.Location)
	}
	return out, total
}

func (t *toolset) definition(ctx context.Context, a *symbolArgs) (tools.Result, error) {
	return t.locations(ctx, a, "textDocument/definition", "definition", nil)
}

func (t *toolset) implementations(ctx context.Context, a *symbolArgs) (tools.Result, error) {
	return t.locations(ctx, a, "textDocument/implementation", "implementations", nil)
}

func (t *toolset) references(ctx context.Context, a *symbolArgs) (tools.Result, error) {
	return t.locations(ctx, a, "textDocument/references", "references", map[string]any{"includeDeclaration": false})
}

// locations asks method at a's symbol and lists the locations.
func (t *toolset) locations(ctx context.Context, a *symbolArgs, method, what string, extra map[string]any) (tools.Result, error) {
	tg, res, err := t.locate(ctx, a)
	if tg == nil {
		return *res, err
	}
	params := tg.docPos()
	if extra != nil {
		params["context"] = extra
	}
	var raw json.RawMessage
	server, err := t.env.Source.Request(ctx, tg.abs, tg.text, method, params, &raw)
	if err != nil {
		return failed(err)
	}
	locs, total := decodeLocations(raw, MaxLocations)
	ls := t.lines(ctx)
	refs := make([]Ref, 0, len(locs))
	for _, l := range locs {
		refs = append(refs, ls.ref(l))
	}
	kept := len(refs)
	refs, note := t.withoutSecretFiles(refs)
	total -= kept - len(refs) // the withheld ones are not counted either
	sortRefs(refs)
	ans := &Answer{Server: server, Symbol: a.Symbol, Refs: refs, Total: total, Files: fileCount(refs)}
	head := fmt.Sprintf("%s of %s (%s:%d) via %s: %d in %d file(s)%s", what, a.Symbol, tg.path, tg.line, server, ans.Total, ans.Files, note)
	if len(refs) == 0 {
		head = fmt.Sprintf("%s of %s (%s:%d) via %s: none%s", what, a.Symbol, tg.path, tg.line, server, note)
		return tools.Result{Text: head, Files: []string{tg.path.String()}, Data: ans}, nil
	}
	if total > len(refs) {
		head += fmt.Sprintf(" (the first %d kept: files counted among them)", len(refs))
	}
	body := grouped(refs, MaxReferences, total)
	if what == "definition" {
		body = t.around(ctx, refs)
	}
	return tools.Result{Text: head + "\n" + body, Files: refPaths(refs), Evidence: head, Data: ans}, nil
}

// withoutSecretFiles drops the locations inside files that are or link to
// files that commonly hold secrets (tools.SecretPath: a //go:embed .env
// definition, references a language server places in .env), and says how
// many it dropped. The context gate would withhold the whole result for
// any of them; dropping them here keeps the rest of the answer.
func (t *toolset) withoutSecretFiles(refs []Ref) ([]Ref, string) {
	kept := refs[:0]
	var dropped []string
	for _, r := range refs {
		if p, err := t.env.Workspace.Resolve(r.Path); err == nil && tools.SecretPath(p) {
			if !slices.Contains(dropped, r.Path) {
				dropped = append(dropped, r.Path)
			}
			continue
		}
		kept = append(kept, r)
	}
	if len(dropped) == 0 {
		return kept, ""
	}
	return kept, fmt.Sprintf(" (%d location(s) withheld: %s commonly holds secrets)", len(refs)-len(kept), strings.Join(dropped, ", "))
}

// around shows each definition with the lines around it.
func (t *toolset) around(ctx context.Context, refs []Ref) string {
	var b strings.Builder
	for _, r := range refs {
		fmt.Fprintf(&b, "%s:%d\n", r.Path, r.Line)
		p, err := t.env.Workspace.Resolve(r.Path)
		if err != nil {
			fmt.Fprintf(&b, "  %d: %s\n", r.Line, r.Text)
			continue
		}
		f, err := t.env.Workspace.ReadFile(ctx, p)
		if err != nil {
			continue
		}
		ls := strings.Split(f.Text, "\n")
		for i := max(r.Line-3, 1); i <= min(r.Line+6, len(ls)); i++ {
			fmt.Fprintf(&b, "  %d: %s\n", i, strings.TrimRight(ls[i-1], "\r"))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (t *toolset) hover(ctx context.Context, a *symbolArgs) (tools.Result, error) {
	tg, res, err := t.locate(ctx, a)
	if tg == nil {
		return *res, err
	}
	var h hover
	server, err := t.env.Source.Request(ctx, tg.abs, tg.text, "textDocument/hover", tg.docPos(), &h)
	if err != nil {
		return failed(err)
	}
	text := cutHover(hoverText(h.Contents))
	if text == "" {
		return tools.Result{Text: fmt.Sprintf("%s (%s:%d) via %s: no information", a.Symbol, tg.path, tg.line, server)}, nil
	}
	return tools.Result{Text: fmt.Sprintf("%s (%s:%d) via %s:\n%s", a.Symbol, tg.path, tg.line, server, text),
		Files: []string{tg.path.String()}, Data: &Answer{Server: server, Symbol: a.Symbol}}, nil
}

// cutHover keeps the first MaxHover bytes of a hover text (its
// signature and the start of its documentation), on a line end when
// there is one, with a note of what was cut.
func cutHover(s string) string {
	if len(s) <= MaxHover {
		return s
	}
	h := s[:MaxHover]
	if i := strings.LastIndexByte(h, '\n'); i > MaxHover/2 {
		h = h[:i]
	}
	h = strings.ToValidUTF8(h, "")
	return fmt.Sprintf("%s\n[... %d bytes cut: the hover text was %d bytes ...]", h, len(s)-len(h), len(s))
}

// hoverText is MarkupContent, a MarkedString or a list of them as text.
func hoverText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var m struct {
		Value string `json:"value"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &m) == nil {
		return strings.TrimSpace(m.Value)
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		var parts []string
		for _, x := range list {
			if s := hoverText(x); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}

type symbolsArgs struct {
	Query string `json:"query" desc:"the name or part of it, e.g. Total; empty lists every symbol of file"`
	File  string `json:"file,omitempty" desc:"search only this file's symbols (workspace-relative path); empty searches the whole workspace"`
}

func (t *toolset) symbols(ctx context.Context, a *symbolsArgs) (tools.Result, error) {
	ls := t.lines(ctx)
	var refs []Ref
	var kinds []string
	var servers []string
	dropped := 0
	q := strings.ToLower(strings.TrimSpace(a.Query))
	if a.File != "" {
		p, err := t.env.Workspace.Resolve(a.File)
		if err != nil {
			return errorf("file %q: %v", a.File, err), nil
		}
		f, err := t.env.Workspace.ReadFile(ctx, p)
		if err != nil {
			return errorf("file %s: %v", p, err), nil
		}
		abs := t.env.Workspace.Abs(p)
		var syms []documentSymbol
		server, err := t.env.Source.Request(ctx, abs, f.Text, "textDocument/documentSymbol",
			map[string]any{"textDocument": map[string]any{"uri": uri.File(abs)}}, &syms)
		if err != nil {
			return failed(err)
		}
		servers = append(servers, server)
		walkSymbols(syms, func(s documentSymbol, container string) {
			if q != "" && !strings.Contains(strings.ToLower(s.Name), q) {
				return
			}
			if len(refs) == MaxLocations {
				dropped++ // counted, not read
				return
			}
			r := ls.ref(Location{URI: uri.File(abs), Range: symbolRange(s)})
			refs = append(refs, r)
			kinds = append(kinds, kindName(s.Kind)+" "+qualified(container, s.Name))
		})
	} else {
		if q == "" {
			return errorf("query is empty: give a name to search the workspace for, or a file to list its symbols"), nil
		}
		err := t.env.Source.WorkspaceRequest(ctx, "workspace/symbol", map[string]any{"query": a.Query}, func(server string, decode func(any) error) {
			var syms []workspaceSymbol
			if decode(&syms) != nil {
				return
			}
			servers = append(servers, server)
			for _, s := range syms {
				if len(refs) == MaxLocations {
					dropped++ // counted, not read
					continue
				}
				loc := Location{URI: s.Location.URI}
				if s.Location.Range != nil {
					loc.Range = *s.Location.Range
				}
				r := ls.ref(loc)
				if filepath.IsAbs(r.Path) {
					continue // outside the workspace (a dependency, the standard library)
				}
				refs = append(refs, r)
				kinds = append(kinds, kindName(s.Kind)+" "+qualified(s.ContainerName, s.Name))
			}
		})
		if err != nil && len(servers) == 0 {
			return failed(err)
		}
	}
	server := strings.Join(servers, ", ")
	if len(refs) == 0 {
		return tools.Result{Text: fmt.Sprintf("symbols matching %q via %s: none", a.Query, server), Data: &Answer{Server: server, Symbol: a.Query}}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "symbols matching %q via %s: %d\n", a.Query, server, len(refs)+dropped)
	for i, r := range refs {
		if i == MaxReferences {
			fmt.Fprintf(&b, "... and %d more: narrow the query\n", len(refs)+dropped-i)
			break
		}
		fmt.Fprintf(&b, "%s:%d %s\n", r.Path, r.Line, kinds[i])
	}
	return tools.Result{Text: strings.TrimRight(b.String(), "\n"), Files: refPaths(refs),
		Data: &Answer{Server: server, Symbol: a.Query, Refs: refs, Total: len(refs) + dropped, Files: fileCount(refs)}}, nil
}

func qualified(container, name string) string {
	container = container[strings.LastIndexByte(container, '/')+1:] // a package path: its last element
	if container == "" || strings.Contains(name, container) {
		return name
	}
	return container + "." + name
}

func (t *toolset) callers(ctx context.Context, a *symbolArgs) (tools.Result, error) {
	tg, res, err := t.locate(ctx, a)
	if tg == nil {
		return *res, err
	}
	var items []callHierarchyItem
	server, err := t.env.Source.Request(ctx, tg.abs, tg.text, "textDocument/prepareCallHierarchy", tg.docPos(), &items)
	if err != nil {
		return failed(err)
	}
	if len(items) == 0 {
		return errorf("%s (%s:%d) is not a function or method %s can list callers of: use references", a.Symbol, tg.path, tg.line, server), nil
	}
	var calls []incomingCall
	if _, err := t.env.Source.Request(ctx, tg.abs, tg.text, "callHierarchy/incomingCalls", map[string]any{"item": items[0]}, &calls); err != nil {
		return failed(err)
	}
	ls := t.lines(ctx)
	var refs []Ref
	total := 0
	for _, c := range calls {
		for _, r := range c.FromRanges {
			total++
			if len(refs) == MaxLocations {
				continue // counted, not read
			}
			ref := ls.ref(Location{URI: c.From.URI, Range: r})
			ref.Text = c.From.Name + ": " + ref.Text
			refs = append(refs, ref)
		}
	}
	sortRefs(refs)
	ans := &Answer{Server: server, Symbol: a.Symbol, Refs: refs, Total: total, Files: fileCount(refs)}
	head := fmt.Sprintf("callers of %s (%s:%d) via %s: %d call(s) from %d function(s) in %d file(s)", a.Symbol, tg.path, tg.line, server, total, len(calls), ans.Files)
	if len(refs) == 0 {
		return tools.Result{Text: fmt.Sprintf("callers of %s (%s:%d) via %s: none", a.Symbol, tg.path, tg.line, server), Data: ans}, nil
	}
	return tools.Result{Text: head + "\n" + grouped(refs, MaxReferences, total), Files: refPaths(refs), Evidence: head, Data: ans}, nil
}
