package agentls_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

const module = "github.com/agentls/agentls"

// layers ranks the top-level packages: a package may import only packages
// of a lower or equal rank (its own layer). Anything not listed is forbidden
// from being imported by a listed layer.
var layers = map[string]int{
	"internal":  0, // helpers of the tests and benchmarks of every layer
	"workspace": 0,
	"tools":     1,
	"agent":     2,
	"redteam":   5, // tests only: the red-team suite drives the whole server
	"lsp":       3, // the LSP face
	"acp":       3, // the ACP face, a sibling of lsp
	"eval":      3, // the eval harness: runs tasks through the session host, like a face
	// agentls's own LSP client and the tools over language servers: it
	// speaks go.lsp.dev, so the host gets it from the faces (Options).
	"langserver": 3,
	"cmd":        4,
}

// editorFree are the layers that must run without any LSP library, so the
// same agent runs under the server, the command line and tests.
var editorFree = map[string]bool{"workspace": true, "tools": true, "agent": true}

func layerOf(importPath string) (string, bool) {
	rest, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return "", false
	}
	top, _, _ := strings.Cut(rest, "/")
	return top, true
}

// TestImportDirection reads `go list -deps` for every package of the module
// and fails on an import that points up the stack
// (workspace <- tools <- agent <- lsp, acp <- cmd) or on go.lsp.dev reaching
// workspace, tools or agent.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		from, ok := layerOf(p.ImportPath)
		if !ok {
			continue // the module root
		}
		rank, known := layers[from]
		if !known {
			t.Errorf("package %s is in no known layer; add it to layers in deps_test.go", p.ImportPath)
			continue
		}
		checked++
		for _, dep := range p.Deps {
			if editorFree[from] && strings.HasPrefix(dep, "go.lsp.dev/") {
				t.Errorf("%s depends on %s: %s must not depend on LSP libraries", p.ImportPath, dep, from)
			}
			to, ok := layerOf(dep)
			if !ok {
				continue
			}
			if r, known := layers[to]; !known || r > rank {
				t.Errorf("%s depends on %s: %s may not import %s", p.ImportPath, dep, from, to)
			}
		}
	}
	if checked == 0 {
		t.Fatal("go list reported no packages of the module")
	}
}

// The layer check above keeps the tower upright; the rules below
// keep the seams inside it where the design puts them. Paths are relative
// to the module; "x/..." matches x and every package below it. Only
// production code is checked (test files may import what they test with).

// leafRules name packages that depend on nothing of the module but the
// packages listed, directly or through others: they can be read, tested and
// reused alone. internal/lazyregexp and internal/rawsys, listed where a
// leaf uses them, depend on the standard library (and x/sys) only.
var leafRules = []struct {
	pkg    string
	except []string // packages matching pkg that the rule does not cover
	only   []string
	why    string
}{
	{pkg: "workspace/...", only: []string{"internal/rawsys"}, why: "the workspace (files under a root handle) is the bottom of the stack; its walk reads folders through internal/rawsys, the process's one switch for raw file system calls"},
	{pkg: "internal/...", why: "the helpers shared by the tests and benchmarks of every layer stand below all of them"},
	{pkg: "agent/redact", only: []string{"internal/lazyregexp"}, why: "redaction is used by every package that writes text down"},
	{pkg: "agent/gitstate", why: "git state is read by the session host and knows nothing of tasks or tools"},
	{pkg: "agent/store", only: []string{"agent/redact", "internal/lazyregexp"},
		why: "the session store keeps its own types; the journal converts to and from them"},
	{pkg: "agent/llm", only: []string{"agent/redact", "internal/lazyregexp"},
		why: "the model client knows nothing of editors, tools or tasks"},
	{pkg: "agent/llm/...", except: []string{"agent/llm"}, only: []string{"agent/llm", "agent/redact", "workspace/ownfs", "internal/lazyregexp"},
		why: "the fake model and the flight recorder speak the client's types, and write agentls's own files through the one helper that follows no link"},
	{pkg: "lsp/wire", why: "the wire (framing, codec) carries LSP messages and knows nothing of the server or the agent"},
}

// importRules forbid direct imports: pkg must not import any of never.
var importRules = []struct {
	pkg    string
	except []string
	never  []string
	why    string
}{
	{pkg: "lsp/...", never: []string{"tools/grep"},
		why: "the search index belongs to the agent session; the LSP face only adapts it"},
	{pkg: "agent/...", except: []string{"agent/session"}, never: []string{"tools/grep"},
		why: "agent/session alone builds the search index; the loop reaches it through the tools"},
	{pkg: "acp/...", never: []string{"lsp", "lsp/lsptest"},
		why: "the faces are siblings on the host: ACP is not an LSP extension"},
	{pkg: "lsp/...", never: []string{"acp"},
		why: "the faces are siblings on the host: the LSP server knows nothing of ACP"},
	{pkg: "agent/...", except: []string{"agent/session", "agent/extensions"}, never: []string{"tools/mcp"},
		why: "MCP servers are chosen and run by the extensions and started and stopped through the session host; the loop sees only their tools"},
	{pkg: "lsp/...", never: []string{"tools/mcp"},
		why: "MCP servers belong to the session host; the LSP face reaches them through it"},
	{pkg: "agent/journal/...", never: []string{"agent", "agent/session"},
		why: "the journal is what a task recorded, read back (stored forms, undo, lessons); it knows nothing of the loop that records or the host"},
	{pkg: "lsp/server", never: []string{"lsp", "agent/...", "tools/...", "langserver/...", "acp/..."},
		why: "the protocol server (lifecycle, document sync, commands, progress) knows nothing of the agent face plugged into it, of the loop and its tools, nor of the agent's settings: the face hands it a redactor and a log level, and it hands the face the settings as the client sent them"},
	{pkg: "agent/permission", never: []string{"agent", "agent/session", "agent/journal", "agent/store"},
		why: "the permission service (requests, policy, remembered answers) knows nothing of the loop or the host that ask through it"},
	{pkg: "agent/extensions", never: []string{"agent/session", "lsp/...", "acp/...", "cmd/..."},
		why: "the extensions (MCP servers, hooks, prompt files) are what the user and the workspace add to a task; they know nothing of the host that runs the task or of the faces, and get what they need through their constructors"},
	{pkg: "langserver/...", never: []string{"lsp", "acp", "cmd/agentls-core"},
		why: "the language-server client serves every face and knows none of them"},
}

// importerRules name who may import a package directly: only the packages
// listed (and pkg's own tree). They keep a seam where the layers alone
// cannot: a face may import agent/session, which may import agent/store,
// and the layer check is content; this rule is not.
var importerRules = []struct {
	pkg  string
	only []string
	why  string
}{
	{pkg: "agent/store", only: []string{"agent/journal", "agent/session"},
		why: "the journal writes tasks to the session store and reads them back, the host opens it and lists its tasks; " +
			"the loop (agent) records through its Recorder port, and the faces (lsp, acp, cmd/agentls-core) reach the store through session.Host, the only door"},
	{pkg: "agent/journal", only: []string{"agent", "agent/session"},
		why: "the loop records in the journal's vocabulary and continues what it read back, the host reads it back (resume, undo, lessons, follow-ups); " +
			"the faces (lsp, acp, cmd/agentls-core) reach it through session.Host (Start, Resume, Undo)"},
	{pkg: "agent/extensions", only: []string{"agent/session"},
		why: "the session host alone runs a task's extensions (it says how their programs run and where their problems show); " +
			"the faces reach them through session.Host (Prompts, StartMCP, Tools)"},
	{pkg: "agent/settings", only: []string{"lsp", "cmd/agentls-core", "redteam"},
		why: "settings are loaded once, by the LSP face (which also layers the client's options) and by the command line for acp, run and eval; " +
			"the host gets the user's settings and the confirmed endpoints through session.Options, and the ACP face and eval get them from the command line"},
}

// goPackage is what the rules read of `go list`, paths relative to the module.
type goPackage struct {
	Path    string
	Imports []string // direct imports of the module
	Deps    []string // every package of the module it depends on
	// All are the direct imports as go list names them, the standard
	// library's too (os/exec).
	All []string
}

// modulePackages lists the production packages of the module.
func modulePackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(paths []string) []string {
		var r []string
		for _, p := range paths {
			if s, ok := strings.CutPrefix(p, module+"/"); ok {
				r = append(r, s)
			}
		}
		return r
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		path, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue // the module root holds only tests
		}
		pkgs = append(pkgs, goPackage{Path: path, Imports: rel(p.Imports), Deps: rel(p.Deps), All: p.Imports})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list reported no packages of the module")
	}
	return pkgs
}

// matches reports whether path is covered by pattern (with "/..." for a
// tree) and not by one of except.
func matches(pattern string, except []string, path string) bool {
	if slices.Contains(except, path) {
		return false
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == pattern
}

// leafViolations returns one message per module dependency of a leaf that
// its rule does not list, and one per rule that matches no package (a rule
// left behind by a rename would otherwise pass silently).
func leafViolations(pkgs []goPackage) []string {
	var out []string
	for _, r := range leafRules {
		matched := false
		for _, p := range pkgs {
			if !matches(r.pkg, r.except, p.Path) {
				continue
			}
			matched = true
			for _, d := range p.Deps {
				if !slices.Contains(r.only, d) && !matches(r.pkg, nil, d) {
					out = append(out, fmt.Sprintf("%s depends on %s; it may depend only on %s of this module (%s)",
						p.Path, d, orNothing(r.only), r.why))
				}
			}
		}
		if !matched {
			out = append(out, fmt.Sprintf("leaf rule %q matches no package: update deps_test.go", r.pkg))
		}
	}
	return out
}

// importViolations returns one message per forbidden direct import.
func importViolations(pkgs []goPackage) []string {
	var out []string
	for _, r := range importRules {
		matched := false
		for _, p := range pkgs {
			if !matches(r.pkg, r.except, p.Path) {
				continue
			}
			matched = true
			for _, imp := range p.Imports {
				if slices.ContainsFunc(r.never, func(n string) bool { return matches(n, nil, imp) }) {
					out = append(out, fmt.Sprintf("%s imports %s; %s must not (%s)", p.Path, imp, r.pkg, r.why))
				}
			}
		}
		if !matched {
			out = append(out, fmt.Sprintf("import rule %q matches no package: update deps_test.go", r.pkg))
		}
	}
	return out
}

// importerViolations returns one message per direct import of a rule's
// package by a package the rule does not list, and one per rule whose
// package does not exist.
func importerViolations(pkgs []goPackage) []string {
	var out []string
	for _, r := range importerRules {
		matched := false
		for _, p := range pkgs {
			if matches(r.pkg, nil, p.Path) {
				matched = true
				continue
			}
			for _, imp := range p.Imports {
				if matches(r.pkg, nil, imp) && !slices.Contains(r.only, p.Path) {
					out = append(out, fmt.Sprintf("%s imports %s; only %s may (%s)", p.Path, imp, orNothing(r.only), r.why))
				}
			}
		}
		if !matched {
			out = append(out, fmt.Sprintf("importer rule %q matches no package: update deps_test.go", r.pkg))
		}
	}
	return out
}

func orNothing(paths []string) string {
	if len(paths) == 0 {
		return "nothing"
	}
	return strings.Join(paths, ", ")
}

// TestPackageDirection checks the leaf and import rules against the
// module's packages as `go list` reports them.
func TestPackageDirection(t *testing.T) {
	pkgs := modulePackages(t)
	for _, v := range slices.Concat(leafViolations(pkgs), importViolations(pkgs), importerViolations(pkgs)) {
		t.Error(v)
	}
}

// TestStoreImportRuleCanFail feeds the importer rule a module whose faces
// and a leaf reach agent/store directly: each is reported, the host and
// the loop are not, and a rule whose package is gone is reported too.
func TestStoreImportRuleCanFail(t *testing.T) {
	broken := []goPackage{
		{Path: "agent/store", Imports: []string{"agent/redact"}},
		{Path: "agent", Imports: []string{"agent/store"}},
		{Path: "agent/session", Imports: []string{"agent", "agent/store"}},
		{Path: "agent/llm/recorder", Imports: []string{"agent/llm", "agent/store"}},
		{Path: "lsp", Imports: []string{"agent/session"}},
		{Path: "acp", Imports: []string{"agent/session", "agent/store"}},
		{Path: "cmd/agentls-core", Imports: []string{"agent/session", "agent/store"}},
	}
	var got []string
	for _, v := range importerViolations(broken) {
		if strings.Contains(v, " imports agent/store;") {
			got = append(got, v)
		}
	}
	for _, want := range []string{"agent", "agent/llm/recorder", "acp", "cmd/agentls-core"} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, want+" imports agent/store;") }) {
			t.Errorf("importerViolations does not report %s importing agent/store:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 4 {
		t.Errorf("%d violations; want 4 (agent/journal, agent/session and lsp may stand):\n%s", len(got), strings.Join(got, "\n"))
	}
	if v := importerViolations([]goPackage{{Path: "agent"}}); !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, `"agent/store" matches no package`) }) {
		t.Errorf("importerViolations of a module without agent/store = %q; want the stale rule reported", v)
	}
}

// TestLoopRecordsThroughJournalCanFail feeds the importer rules a module
// where the loop reads the store itself and every face reaches into the
// journal or the store: each is reported; the loop importing the journal,
// the journal the store and the host both stand.
func TestLoopRecordsThroughJournalCanFail(t *testing.T) {
	broken := []goPackage{
		{Path: "agent/store"},
		{Path: "agent/settings"},
		{Path: "agent/extensions"},
		{Path: "agent/journal", Imports: []string{"agent/store"}},
		{Path: "agent", Imports: []string{"agent/journal", "agent/store"}},
		{Path: "agent/session", Imports: []string{"agent", "agent/journal", "agent/store"}},
		{Path: "lsp", Imports: []string{"agent/session", "agent/journal"}},
		{Path: "acp", Imports: []string{"agent/session", "agent/store"}},
		{Path: "cmd/agentls-core", Imports: []string{"agent/session", "agent/journal", "agent/store"}},
	}
	got := importerViolations(broken)
	want := []string{
		"agent imports agent/store;",
		"lsp imports agent/journal;",
		"acp imports agent/store;",
		"cmd/agentls-core imports agent/journal;",
		"cmd/agentls-core imports agent/store;",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, w) }) {
			t.Errorf("importerViolations does not report %q:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d violations; want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

// TestPackageRulesCatchViolations feeds the rules a module that breaks
// each of them, so a rule that could never fail is noticed.
func TestPackageRulesCatchViolations(t *testing.T) {
	broken := []goPackage{
		{Path: "workspace", Deps: []string{"tools"}, Imports: []string{"tools"}},
		{Path: "agent/redact"},
		{Path: "agent/gitstate"},
		{Path: "internal/benchstat"},
		{Path: "agent/store", Deps: []string{"agent/redact", "agent/llm", "tools"}, Imports: []string{"agent/llm", "tools"}},
		{Path: "agent/llm", Deps: []string{"agent/redact"}, Imports: []string{"agent/redact"}},
		{Path: "agent/llm/recorder", Deps: []string{"agent/llm", "agent/redact", "tools"}, Imports: []string{"agent/llm", "tools"}},
		{Path: "agent/llm/fakemodel", Deps: []string{"agent/llm", "agent/redact"}, Imports: []string{"agent/llm"}},
		{Path: "agent", Imports: []string{"tools/grep"}},
		{Path: "agent/session", Imports: []string{"tools/grep"}},
		{Path: "lsp/lsptest", Imports: []string{"tools/grep"}},
		{Path: "acp", Imports: []string{"lsp", "agent/session"}},
		{Path: "lsp", Imports: []string{"acp"}},
		{Path: "agent/journal", Imports: []string{"agent/store"}},
		{Path: "lsp/wire"},
		{Path: "lsp/server", Imports: []string{"lsp/wire"}},
		{Path: "langserver", Imports: []string{"lsp"}},
		{Path: "agent/permission", Imports: []string{"tools", "agent/session"}},
		{Path: "agent/extensions", Imports: []string{"tools/mcp", "agent/session"}},
	}
	got := strings.Join(append(leafViolations(broken), importViolations(broken)...), "\n")
	for _, want := range []string{
		"workspace depends on tools",
		"agent/store depends on agent/llm",
		"agent/store depends on tools",
		"agent/llm/recorder depends on tools",
		"agent imports tools/grep",
		"lsp/lsptest imports tools/grep",
		"acp imports lsp",
		"lsp imports acp",
		"langserver imports lsp",
		"agent/permission imports agent/session",
		"agent/extensions imports agent/session",
	} {
		if !strings.Contains(got, want+";") {
			t.Errorf("violations do not report %q:\n%s", want, got)
		}
	}
	for _, clean := range []string{"agent/store depends on agent/redact", "agent/llm/fakemodel depends", "agent/session imports", "agent/llm depends"} {
		if strings.Contains(got, clean) {
			t.Errorf("violations report %q, which the rules allow:\n%s", clean, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 11 {
		t.Errorf("%d violations; want 11:\n%s", n, got)
	}

	// A rule that matches no package is reported, not passed.
	if v := importViolations([]goPackage{{Path: "agent/session"}}); !slices.ContainsFunc(v, func(s string) bool {
		return strings.Contains(s, `"lsp/..." matches no package`)
	}) {
		t.Errorf("importViolations of a module without lsp = %q; want the stale rule reported", v)
	}
}

// launchers are the production packages that may import os/exec. Package
// tools alone starts programs (tools.Run: the sandbox, an environment by
// allowlist, programs by absolute path from folders the workspace cannot
// write); lsp/lsptest starts the server binary under test and may be
// imported by tests only. agent/gitstate is reported until it reads git
// state through tools.Run.
var launchers = map[string]bool{"tools": true, "lsp/lsptest": true}

// launcherViolations returns one message per production package outside
// allowed that imports os/exec, and one per production package that
// imports lsp/lsptest (a test-only launcher).
func launcherViolations(pkgs []goPackage, allowed map[string]bool) []string {
	var out []string
	for _, p := range pkgs {
		if slices.Contains(p.All, "os/exec") && !allowed[p.Path] {
			out = append(out, fmt.Sprintf("%s imports os/exec; only package tools starts programs (tools.Run, tools.LookPath)", p.Path))
		}
		if slices.Contains(p.Imports, "lsp/lsptest") {
			out = append(out, fmt.Sprintf("%s imports lsp/lsptest; it starts programs and is for tests only", p.Path))
		}
	}
	return out
}

// TestOneLauncher: no production package but tools imports os/exec.
func TestOneLauncher(t *testing.T) {
	for _, v := range launcherViolations(modulePackages(t), launchers) {
		t.Error(v)
	}
}

// TestOneLauncherRuleCanFail: with no package allowed, the rule reports
// the module's real launchers (tools at least), and a production import of
// lsp/lsptest.
func TestOneLauncherRuleCanFail(t *testing.T) {
	got := strings.Join(launcherViolations(modulePackages(t), nil), "\n")
	if !strings.Contains(got, "tools imports os/exec;") {
		t.Errorf("with no launcher allowed, tools is not reported:\n%s", got)
	}
	v := launcherViolations([]goPackage{{Path: "agent", Imports: []string{"lsp/lsptest"}}}, launchers)
	if len(v) != 1 || !strings.Contains(v[0], "agent imports lsp/lsptest") {
		t.Errorf("a production import of lsp/lsptest: %q", v)
	}
}

// TestJournalImportRuleCanFail feeds the import rules a journal that
// reaches back into the loop and the host: both are reported, and the
// journal's own imports (the store, the model's and tools' types) stand.
func TestJournalImportRuleCanFail(t *testing.T) {
	broken := []goPackage{
		{Path: "agent/journal", Imports: []string{"agent/store", "agent/llm", "tools", "workspace", "agent", "agent/session"}},
		{Path: "agent", Imports: []string{"agent/journal", "agent/store"}},
		{Path: "agent/session", Imports: []string{"agent", "agent/journal"}},
		{Path: "lsp", Imports: []string{"agent/session"}},
		{Path: "acp", Imports: []string{"agent/session"}},
	}
	var got []string
	for _, v := range importViolations(broken) {
		if strings.HasPrefix(v, "agent/journal ") {
			got = append(got, v)
		}
	}
	for _, want := range []string{"agent/journal imports agent;", "agent/journal imports agent/session;"} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, want) }) {
			t.Errorf("importViolations does not report %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 2 {
		t.Errorf("%d journal violations; want 2:\n%s", len(got), strings.Join(got, "\n"))
	}
	if v := importerViolations([]goPackage{{Path: "agent/store"}, {Path: "agent/settings"}, {Path: "agent/extensions"}, {Path: "agent/journal", Imports: []string{"agent/store"}}}); len(v) != 0 {
		t.Errorf("the journal importing the store is reported: %q", v)
	}
}

// TestSettingsImportRuleCanFail: the host loading settings itself, or the
// ACP face reading the user's files, is reported; the LSP face and the
// command line loading them is not.
func TestSettingsImportRuleCanFail(t *testing.T) {
	pkgs := []goPackage{
		{Path: "agent/store"}, {Path: "agent/journal", Imports: []string{"agent/store"}}, {Path: "agent/settings"}, {Path: "agent/extensions"},
		{Path: "lsp", Imports: []string{"agent/settings"}},
		{Path: "cmd/agentls-core", Imports: []string{"agent/settings"}},
		{Path: "agent/session", Imports: []string{"agent/settings"}},
		{Path: "acp", Imports: []string{"agent/settings"}},
	}
	v := importerViolations(pkgs)
	if len(v) != 2 || !strings.HasPrefix(v[0], "agent/session imports agent/settings") && !strings.HasPrefix(v[1], "agent/session imports agent/settings") {
		t.Errorf("violations %q; want agent/session and acp importing agent/settings", v)
	}
}

// TestExtensionsRulesCanFail: extensions that reach into the host or a
// face, and a face or the command line importing the
// extensions, are each reported; the host importing them, and their own
// imports (the loop's types, the permission service, tools, tools/mcp,
// tools/hooks, the workspace), stand.
func TestExtensionsRulesCanFail(t *testing.T) {
	pkgs := []goPackage{
		{Path: "agent/store"}, {Path: "agent/journal", Imports: []string{"agent/store"}}, {Path: "agent/settings"},
		{Path: "agent/extensions", Imports: []string{"agent", "agent/permission", "tools", "tools/mcp", "tools/hooks", "workspace",
			"agent/session", "lsp", "acp"}},
		{Path: "agent/session", Imports: []string{"agent/extensions", "tools/mcp"}},
		{Path: "lsp", Imports: []string{"agent/session", "agent/extensions"}},
		{Path: "acp", Imports: []string{"agent/session"}},
		{Path: "cmd/agentls-core", Imports: []string{"agent/session", "agent/extensions"}},
	}
	var got []string
	for _, v := range slices.Concat(importViolations(pkgs), importerViolations(pkgs)) {
		if strings.Contains(v, "agent/extensions") {
			got = append(got, v)
		}
	}
	want := []string{
		"agent/extensions imports agent/session;",
		"agent/extensions imports lsp;",
		"agent/extensions imports acp;",
		"lsp imports agent/extensions;",
		"cmd/agentls-core imports agent/extensions;",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, w) }) {
			t.Errorf("the rules do not report %q:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d violations naming agent/extensions; want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	// Another package of agent/ starting MCP servers itself is reported;
	// the extensions doing so are not.
	v := importViolations([]goPackage{{Path: "agent", Imports: []string{"tools/mcp"}}, {Path: "agent/extensions", Imports: []string{"tools/mcp"}}})
	if !slices.ContainsFunc(v, func(s string) bool { return strings.HasPrefix(s, "agent imports tools/mcp;") }) ||
		slices.ContainsFunc(v, func(s string) bool { return strings.HasPrefix(s, "agent/extensions imports tools/mcp;") }) {
		t.Errorf("violations %q; want agent importing tools/mcp reported, agent/extensions not", v)
	}
}

// TestWireRuleCanFail: a wire that reaches into the server or the host is
// reported; one that depends on nothing of the module is not.
func TestWireRuleCanFail(t *testing.T) {
	clean := []goPackage{{Path: "lsp/wire"}}
	for _, v := range leafViolations(clean) {
		if strings.HasPrefix(v, "lsp/wire ") {
			t.Errorf("a wire on its own is reported: %s", v)
		}
	}
	broken := []goPackage{{Path: "lsp/wire", Deps: []string{"agent/session", "agent"}}}
	var got []string
	for _, v := range leafViolations(broken) {
		if strings.HasPrefix(v, "lsp/wire depends on") {
			got = append(got, v)
		}
	}
	if len(got) != 2 {
		t.Errorf("wire violations %q; want lsp/wire depending on agent/session and agent reported", got)
	}
}

// TestProtocolServerRuleCanFail: a protocol server that reaches into the
// agent face, the loop or anything under agent/ (the settings in
// agent/session, the redactor in agent/redact) is reported; the face
// importing the server is not.
func TestProtocolServerRuleCanFail(t *testing.T) {
	broken := []goPackage{
		{Path: "lsp/server", Imports: []string{"lsp/wire", "workspace", "lsp", "agent", "tools", "agent/session", "agent/redact"}},
		{Path: "lsp", Imports: []string{"lsp/server", "agent/session"}},
	}
	var got []string
	for _, v := range importViolations(broken) {
		if strings.HasPrefix(v, "lsp/server ") {
			got = append(got, v)
		}
	}
	for _, want := range []string{"lsp/server imports lsp;", "lsp/server imports agent;", "lsp/server imports tools;",
		"lsp/server imports agent/session;", "lsp/server imports agent/redact;"} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, want) }) {
			t.Errorf("importViolations does not report %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 5 {
		t.Errorf("%d protocol-server violations; want 5:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// questionMethod is the port's question method (permission.Asker): the
// permission service alone calls it, so every question passes its policy
// and its memory, and no face or host file asks on its own.
const questionMethod = "AskUser"

// askers are the packages that may call questionMethod.
var askers = map[string]bool{"agent/permission": true}

// goSource is one production file of a package, by path relative to the
// module.
type goSource struct {
	Pkg, Name string
	Text      []byte
}

// moduleSources reads the production .go files of the module's packages.
func moduleSources(t *testing.T) []goSource {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var srcs []goSource
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		rel, _ := strings.CutPrefix(p.ImportPath, module+"/")
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, goSource{Pkg: rel, Name: f, Text: b})
		}
	}
	if len(srcs) == 0 {
		t.Fatal("go list reported no files of the module")
	}
	return srcs
}

// askerViolations returns one message per use of questionMethod (a call
// or a method value: any selector of that name) in a file of a package
// not in allowed, and an error for a file that does not parse.
func askerViolations(srcs []goSource, allowed map[string]bool) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	for _, s := range srcs {
		f, err := parser.ParseFile(fset, s.Pkg+"/"+s.Name, s.Text, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if allowed[s.Pkg] {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == questionMethod {
				out = append(out, fmt.Sprintf("%s uses %s; only %s asks the user (the permission service)", fset.Position(sel.Pos()), questionMethod, "agent/permission"))
			}
			return true
		})
	}
	return out, nil
}

// TestOnlyThePermissionServiceAsks: no production file outside
// agent/permission calls the port's question method.
func TestOnlyThePermissionServiceAsks(t *testing.T) {
	v, err := askerViolations(moduleSources(t), askers)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range v {
		t.Error(s)
	}
}

// TestOnlyThePermissionServiceAsksRuleCanFail: a face calling the
// question method, a host file taking it as a method value, and the
// module's own service once it is no longer allowed are each reported;
// the service itself and a method declaration of that name are not.
func TestOnlyThePermissionServiceAsksRuleCanFail(t *testing.T) {
	srcs := []goSource{
		{Pkg: "lsp", Name: "port.go", Text: []byte("package lsp\nfunc (p *taskPort) AskUser() {}\nfunc f(p P) { p.AskUser(ctx, r) }\n")},
		{Pkg: "agent/session", Name: "mcp.go", Text: []byte("package session\nfunc g(p Port) { ask := p.AskUser; _ = ask }\n")},
		{Pkg: "agent/permission", Name: "permission.go", Text: []byte("package permission\nfunc h(a Asker) { a.AskUser(ctx, r) }\n")},
	}
	v, err := askerViolations(srcs, askers)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(v, "\n")
	if len(v) != 2 || !strings.Contains(got, "lsp/port.go:3:") || !strings.Contains(got, "agent/session/mcp.go:2:") {
		t.Errorf("violations = %q; want lsp/port.go:3 and agent/session/mcp.go:2 only", v)
	}
	// With no package allowed, the real service is reported: the rule sees
	// the module's own calls.
	real, err := askerViolations(moduleSources(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(real, func(s string) bool { return strings.HasPrefix(s, "agent/permission/") }) {
		t.Errorf("with no asker allowed, agent/permission is not reported: %q", real)
	}
}

// faces are the packages that show what a task does: they render the
// presentation each tool gives its calls (tools.Presentation) and never
// know a tool by its name.
var faces = []string{"lsp", "acp", "cmd/agentls-core"}

// toolNameAllowed are face files that may hold a tool's name, each with
// why; keep it empty or tiny.
var toolNameAllowed = map[string]string{
	// Which calls read a file's text through the ACP client's fs (the
	// editor's unsaved text): a rule of file access, not of presentation.
	"acp/clientfs.go": "the tools whose reads go through the client's fs",
}

func isFace(pkg string) bool {
	return slices.ContainsFunc(faces, func(f string) bool { return pkg == f || strings.HasPrefix(pkg, f+"/") })
}

// toolNames are the names of every tool a task may be offered: the
// built-in registry's, the language tools' (from their own constructors)
// and those of tools declared elsewhere in the module by a Name method
// returning a literal next to a Present method (the loop's ask_user).
func toolNames(t *testing.T, srcs []goSource) map[string]bool {
	t.Helper()
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	reg := tools.New(tools.Env{Workspace: ws})
	defer reg.Close()
	names := map[string]bool{}
	for _, tl := range append(reg.Tools(), langserver.Tools(langserver.Env{Workspace: ws})...) {
		names[tl.Name()] = true
	}
	fset := token.NewFileSet()
	for _, s := range srcs {
		f, err := parser.ParseFile(fset, s.Name, s.Text, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]string{} // receiver type -> literal Name
		presents := map[string]bool{}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			recv := types(fd.Recv.List[0].Type)
			switch fd.Name.Name {
			case "Present":
				presents[recv] = true
			case "Name":
				if fd.Body != nil && len(fd.Body.List) == 1 {
					if r, ok := fd.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						if lit, ok := r.Results[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							named[recv] = strings.Trim(lit.Value, "\"`")
						}
					}
				}
			}
		}
		for recv, n := range named {
			if presents[recv] {
				names[n] = true
			}
		}
	}
	return names
}

// types is the name of a receiver's type (T or *T).
func types(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// toolNameViolations returns one message per string literal in a face's
// file (not allowed) that is the name of a tool: a face that switches on,
// compares with or keys a map by a tool's name.
func toolNameViolations(srcs []goSource, names map[string]bool, allowed map[string]string) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	for _, s := range srcs {
		file := s.Pkg + "/" + s.Name
		if !isFace(s.Pkg) || allowed[file] != "" {
			continue
		}
		f, err := parser.ParseFile(fset, file, s.Text, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && names[v] {
				out = append(out, fmt.Sprintf("%s names the tool %q; render the call's tools.Presentation instead", fset.Position(lit.Pos()), v))
			}
			return true
		})
	}
	return out, nil
}

// TestFacesNameNoTool: no face holds a tool's name (the tools describe
// their own calls), so a new tool needs no edit in any face.
func TestFacesNameNoTool(t *testing.T) {
	srcs := moduleSources(t)
	v, err := toolNameViolations(srcs, toolNames(t, srcs), toolNameAllowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range v {
		t.Error(s)
	}
	if len(toolNameAllowed) > 1 {
		t.Errorf("%d face files may name tools; the list must stay tiny: %v", len(toolNameAllowed), toolNameAllowed)
	}
}

// TestFacesNameNoToolRuleCanFail: a face's switch, comparison and map key
// on tool names are each reported, with the names the module really
// registers (built-in, language and the loop's own tools); the same
// literal outside a face and in an allowed file is not; and with nothing
// allowed the rule sees the module's own allowed file.
func TestFacesNameNoToolRuleCanFail(t *testing.T) {
	real := moduleSources(t)
	names := toolNames(t, real)
	for _, n := range []string{"read_file", "run_command", "references", "rename_symbol", "ask_user"} {
		if !names[n] {
			t.Fatalf("tool names %v miss %q: the rule would not see it", names, n)
		}
	}
	srcs := []goSource{
		{Pkg: "lsp", Name: "sink.go", Text: []byte("package lsp\nfunc f(tool string) string {\n\tswitch tool {\n\tcase \"read_file\":\n\t\treturn \"r\"\n\t}\n\treturn \"\"\n}\n")},
		{Pkg: "acp", Name: "toolcalls.go", Text: []byte("package acp\nfunc g(tool string) bool { return tool == `run_command` }\n")},
		{Pkg: "cmd/agentls-core", Name: "run.go", Text: []byte("package main\nvar langTools = map[string]bool{\"references\": true}\n")},
		{Pkg: "tools", Name: "read_file.go", Text: []byte("package tools\nconst name = \"read_file\"\n")},
		{Pkg: "acp", Name: "clientfs.go", Text: []byte("package acp\nvar m = map[string]bool{\"read_file\": true}\n")},
		{Pkg: "lsp", Name: "ok.go", Text: []byte("package lsp\nconst s = \"reading a file\"\n")},
	}
	v, err := toolNameViolations(srcs, names, toolNameAllowed)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(v, "\n")
	if len(v) != 3 || !strings.Contains(got, "lsp/sink.go:4:") || !strings.Contains(got, "acp/toolcalls.go:2:") || !strings.Contains(got, "cmd/agentls-core/run.go:2:") {
		t.Errorf("violations = %q; want lsp/sink.go:4, acp/toolcalls.go:2 and cmd/agentls-core/run.go:2 only", v)
	}
	all, err := toolNameViolations(real, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(all, func(s string) bool { return strings.HasPrefix(s, "acp/clientfs.go:") }) {
		t.Errorf("with nothing allowed, acp/clientfs.go is not reported: %q", all)
	}
}
