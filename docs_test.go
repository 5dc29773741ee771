package agentls_test

// Doc tests: what README.md and docs/ tell a user to type or paste is
// checked against the real thing, so a doc that drifts from the code fails
// the build. Links must reach a file and a heading; every `agentls` command
// line names a real subcommand with real flags (the side-effect-free ones
// are run); every `make` target exists; every JSON snippet parses and
// names only real settings; TOML parses with real settings; the Lua, Vim
// script and Emacs Lisp snippets for agentls's own plugins run in the real
// editors, and the ones for other plugins at least parse there.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentls/agentls/agent/session"
)

// docBlock is one fenced code block of a markdown file.
type docBlock struct {
	file string // path from the module root
	line int    // of the opening fence, 1-based
	lang string // the fence's info string ("" for none)
	text string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d (```%s)", b.file, b.line, b.lang) }

// docFiles are the markdown files a user reads: README.md and docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{"README.md"}, files...)
}

var fence = regexp.MustCompile("^(\\s*)```\\s*([A-Za-z0-9_+-]*)")

// docBlocks returns the fenced code blocks of the doc files.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	var out []docBlock
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			m := fence.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			start := i
			var body []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				body = append(body, strings.TrimPrefix(lines[i], m[1]))
			}
			out = append(out, docBlock{file: f, line: start + 1, lang: m[2], text: strings.Join(body, "\n")})
		}
	}
	return out
}

// TestDocLinksReachAFileAndAHeading: every relative link of README.md and
// docs/ names a file of the repository and, with a #fragment, a heading
// of that file (GitHub's anchors).
func TestDocLinksReachAFileAndAHeading(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	headingsOf := func(f string) map[string]bool {
		if a, ok := anchors[f]; ok {
			return a
		}
		a := map[string]bool{}
		data, _ := os.ReadFile(f)
		seen := map[string]int{}
		inFence := false
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inFence = !inFence
			}
			if inFence || !strings.HasPrefix(l, "#") {
				continue
			}
			h := strings.TrimSpace(strings.TrimLeft(l, "#"))
			s := githubAnchor(h)
			if n := seen[s]; n > 0 {
				a[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				a[s] = true
			}
			seen[s]++
		}
		anchors[f] = a
		return a
	}
	checked := 0
	for _, f := range docFiles(t) {
		data, _ := os.ReadFile(f)
		text := stripCode(string(data))
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p, frag, _ := strings.Cut(target, "#")
			dest := f
			if p != "" {
				dest = filepath.Join(filepath.Dir(f), p)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: no file %s", f, target, dest)
					continue
				}
			}
			checked++
			if frag != "" && strings.HasSuffix(dest, ".md") && !headingsOf(dest)[frag] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", f, target, dest, frag)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d links; the docs hold far more: is the link pattern broken?", checked)
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// stripCode blanks fenced blocks and code spans, where a "](x)" is not a link.
func stripCode(s string) string {
	var out []string
	inFence := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		out = append(out, regexp.MustCompile("`[^`]*`").ReplaceAllString(l, ""))
	}
	return strings.Join(out, "\n")
}

var (
	docBinOnce sync.Once
	docBin     string
	docBinErr  error
)

// agentlsBinary builds agentls (cmd/agentls and agentls-core beside it, as
// make install puts them) once for the doc tests.
func agentlsBinary(t *testing.T) string {
	t.Helper()
	docBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentls-doctest-")
		if err != nil {
			docBinErr = err
			return
		}
		docBin = filepath.Join(dir, "agentls")
		out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/agentls", "./cmd/agentls-core").CombinedOutput()
		if err != nil {
			docBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if docBinErr != nil {
		t.Fatal(docBinErr)
	}
	return docBin
}

// commandLines are the lines of a block that a user would type: every
// line of a sh block, and the lines of an untagged block that start with
// agentls or make (usage listings and transcripts).
func commandLines(b docBlock) []string {
	var out []string
	for _, l := range strings.Split(b.text, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "$ "))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		switch {
		case b.lang == "sh" || b.lang == "bash":
			out = append(out, l)
		case b.lang == "" && (strings.HasPrefix(l, "agentls ") || l == "agentls" || strings.HasPrefix(l, "make ")):
			out = append(out, l)
		}
	}
	return out
}

// TestDocCommandLinesNameRealCommands: every agentls command line of the
// docs names a subcommand `agentls help` lists and only flags its `-h`
// prints; every make target exists in the Makefile; every variable a
// snippet exports is one agentls reads.
func TestDocCommandLinesNameRealCommands(t *testing.T) {
	bin := agentlsBinary(t)
	help, _ := exec.Command(bin, "help").CombinedOutput()
	subs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z-]+)\s{2,}`).FindAllStringSubmatch(string(help), -1) {
		subs[m[1]] = true
	}
	if !subs["serve"] || !subs["acp"] || !subs["run"] {
		t.Fatalf("agentls help lists %v; want serve, acp, run and the rest:\n%s", subs, help)
	}
	flagHelp := map[string]string{}
	flagsOf := func(sub string) string {
		if h, ok := flagHelp[sub]; ok {
			return h
		}
		out, _ := exec.Command(bin, sub, "-h").CombinedOutput()
		flagHelp[sub] = string(out)
		return string(out)
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	src := goSources(t)
	flagWord := regexp.MustCompile(`^--?([a-zA-Z][a-zA-Z0-9-]*)`)
	checked := 0
	for _, b := range docBlocks(t) {
		for _, line := range commandLines(b) {
			// A usage listing: "agentls version | help", "[serve]".
			code, _, _ := strings.Cut(line, "  ")
			for _, alt := range strings.Split(code, " | ") {
				words := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(alt))
				if len(words) == 0 {
					continue
				}
				switch words[0] {
				case "agentls":
					checked++
					if len(words) == 1 {
						continue
					}
					sub := words[1]
					if strings.HasPrefix(sub, "-") || strings.ToUpper(sub) == sub {
						continue
					}
					if !subs[sub] {
						t.Errorf("%s: %q names `agentls %s`, which `agentls help` does not list", b, line, sub)
						continue
					}
					for _, w := range words[2:] {
						m := flagWord.FindStringSubmatch(w)
						if m == nil {
							continue
						}
						if !regexp.MustCompile(`(?m)^\s*-` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(flagsOf(sub)) {
							t.Errorf("%s: %q passes -%s, which `agentls %s -h` does not list", b, line, m[1], sub)
						}
					}
				case "make":
					checked++
					for _, target := range words[1:] {
						if strings.ContainsAny(target, "=#") {
							break
						}
						if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
							t.Errorf("%s: %q names make target %q, which the Makefile lacks", b, line, target)
						}
					}
				case "export":
					for _, w := range words[1:] {
						name, _, ok := strings.Cut(w, "=")
						if !ok || !regexp.MustCompile(`^(OPENAI|AGENTLS)_`).MatchString(name) {
							continue
						}
						checked++
						if !strings.Contains(src, `"`+name+`"`) {
							t.Errorf("%s: %q exports %s, which no Go source of agentls reads", b, line, name)
						}
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d command lines; the docs hold more: is the extraction broken?", checked)
	}
}

// TestDocReadOnlyCommandsRun: the docs' command lines that change nothing
// (help, version, tool, stats) run for real in a fresh workspace and exit 0.
func TestDocReadOnlyCommandsRun(t *testing.T) {
	bin := agentlsBinary(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\n// TODO: greet\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, b := range docBlocks(t) {
		for _, line := range commandLines(b) {
			if !regexp.MustCompile(`^agentls (tool (grep|list_files|read_file) '|tool --list$|version$|help$|stats( --json)?$)`).MatchString(line) {
				continue
			}
			f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
			if err != nil {
				t.Errorf("%s: %q does not parse as a shell command: %v", b, line, err)
				continue
			}
			var args []string
			syntax.Walk(f, func(n syntax.Node) bool {
				if c, ok := n.(*syntax.CallExpr); ok {
					for _, w := range c.Args {
						args = append(args, wordLiteral(w))
					}
					return false
				}
				return true
			})
			cmd := exec.Command(bin, args[1:]...)
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			ran++
			if err != nil {
				t.Errorf("%s: %q failed: %v\n%s", b, line, err, out)
			}
		}
	}
	if ran == 0 {
		t.Error("no read-only command line found in the docs: is the extraction broken?")
	}
}

// wordLiteral is a shell word with its quotes removed (no expansion).
func wordLiteral(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				}
			}
		}
	}
	return b.String()
}

// goSources is the text of every non-test Go file of the module.
func goSources(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// settingNames are the keys of the agentls settings object.
func settingNames() map[string]bool {
	names := map[string]bool{"mcpServers": true}
	st := reflect.TypeOf(session.Settings{})
	for i := range st.NumField() {
		tag, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if tag != "" && tag != "-" {
			names[tag] = true
		}
	}
	return names
}

// TestDocJSONSnippetsParseAndNameRealSettings: every JSON snippet parses,
// and the keys of an "agentls" object are settings the server knows.
func TestDocJSONSnippetsParseAndNameRealSettings(t *testing.T) {
	known := settingNames()
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "json" {
			continue
		}
		n++
		var v any
		if err := json.Unmarshal([]byte(b.text), &v); err != nil {
			t.Errorf("%s: not JSON: %v", b, err)
			continue
		}
		if m, ok := v.(map[string]any); ok {
			if s, ok := m["agentls"].(map[string]any); ok {
				for k := range s {
					if !known[k] {
						t.Errorf("%s: agentls setting %q is not one the server knows", b, k)
					}
				}
			}
		}
	}
	if n < 5 {
		t.Errorf("found %d JSON snippets; the docs hold more", n)
	}
}

// TestDocTOMLSnippetsParse: every TOML snippet parses, and the settings a
// Helix snippet passes (config) are settings the server knows.
func TestDocTOMLSnippetsParse(t *testing.T) {
	known := settingNames()
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "toml" {
			continue
		}
		n++
		v, err := parseTOML(b.text)
		if err != nil {
			t.Errorf("%s: not TOML: %v", b, err)
			continue
		}
		if ls, ok := v["language-server"].(map[string]any); ok {
			if a, ok := ls["agentls"].(map[string]any); ok {
				cfg, _ := a["config"].(map[string]any)
				for k := range cfg {
					if !known[k] {
						t.Errorf("%s: config key %q is not a setting the server knows", b, k)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Error("no TOML snippet found")
	}
}

// parseTOML parses TOML with Python's tomllib (Python 3.11 and later, which
// make install provides), to spare the module a TOML dependency for one test.
func parseTOML(text string) (map[string]any, error) {
	cmd := exec.Command("python3", "-c", "import sys, json, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))")
	cmd.Stdin = strings.NewReader(text)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var v map[string]any
	err = json.Unmarshal(out, &v)
	return v, err
}

// ownPlugin reports whether a snippet configures only agentls's own
// plugin (so it can run in a bare editor) rather than another plugin.
func ownPlugin(text string) bool {
	for _, other := range []string{"codecompanion", "avante", "agent-shell", "lspconfig", "lazy", "acp-make-client"} {
		if strings.Contains(text, other) && !strings.Contains(text, "-- lazy.nvim:") {
			return false
		}
	}
	return true
}

// TestDocNeovimSnippetsRun: the Lua and Vim script snippets for the
// agentls plugin run in a real headless Neovim with editors/nvim on the
// runtimepath, with no error; the ones for other plugins parse.
func TestDocNeovimSnippetsRun(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		t.Fatalf("nvim is needed to run the docs' Neovim snippets (make install installs it): %v", err)
	}
	rtp, _ := filepath.Abs("editors/nvim")
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "lua" && !(b.lang == "vim" && strings.Contains(b.text, "luaeval")) {
			continue
		}
		n++
		f := filepath.Join(t.TempDir(), "snippet."+b.lang)
		if err := os.WriteFile(f, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		var run string
		switch {
		case b.lang == "vim":
			run = "source " + f + " | redraw! | echo &statusline"
		case ownPlugin(b.text):
			run = "execute 'luafile " + f + "'"
		default:
			run = fmt.Sprintf("lua assert(loadfile(%q))", f)
		}
		home := t.TempDir()
		cmd := exec.Command(nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "set rtp^="+rtp,
			"-c", "try | "+run+" | catch | echo 'SNIPPET-ERROR: ' .. v:exception | cquit 1 | endtry", "-c", "qa!")
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home, "XDG_STATE_HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "SNIPPET-ERROR") || strings.Contains(string(out), "E5108") {
			t.Errorf("%s: Neovim: %v\n%s", b, err, out)
		}
	}
	if n == 0 {
		t.Error("no Neovim snippet found")
	}
}

// TestDocEmacsSnippetsRun: the Emacs Lisp snippets for agentls.el run in
// a real batch Emacs (the path placeholder pointed at this checkout),
// and the ones for other packages read as Lisp.
func TestDocEmacsSnippetsRun(t *testing.T) {
	emacs, err := exec.LookPath("emacs")
	if err != nil {
		t.Fatalf("emacs is needed to run the docs' Emacs snippets (make install installs it): %v", err)
	}
	top, _ := filepath.Abs(".")
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "elisp" {
			continue
		}
		n++
		f := filepath.Join(t.TempDir(), "snippet.el")
		text := strings.ReplaceAll(b.text, "/path/to/agentls", top)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		eval := fmt.Sprintf(`(with-temp-buffer (insert-file-contents %q) (goto-char (point-min)) (condition-case nil (while t (read (current-buffer))) (end-of-file nil)))`, f)
		if ownPlugin(b.text) {
			// agentls-mode starts nothing until a file is visited.
			eval = fmt.Sprintf(`(progn (load %q nil t) (princ "SNIPPET-OK"))`, f)
		}
		cmd := exec.Command(emacs, "--batch", "-Q", "-L", filepath.Join(top, "editors/emacs"), "--eval", eval)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || (ownPlugin(b.text) && !strings.Contains(string(out), "SNIPPET-OK")) {
			t.Errorf("%s: Emacs: %v\n%s", b, err, out)
		}
	}
	if n == 0 {
		t.Error("no Emacs snippet found")
	}
}

// TestDocBlocksAreOfKnownKinds: a fenced block is either a kind the doc
// tests check or one that holds no command or setting (output, a diagram,
// code for the model to edit); a new kind must be given a check here.
func TestDocBlocksAreOfKnownKinds(t *testing.T) {
	checkedKinds := []string{"", "sh", "bash", "json", "toml", "lua", "vim", "elisp"}
	// Examples of files in a user's repository, not instructions to type.
	exampleKinds := []string{"go", "rust", "markdown"}
	for _, b := range docBlocks(t) {
		if !slices.Contains(checkedKinds, b.lang) && !slices.Contains(exampleKinds, b.lang) {
			t.Errorf("%s: no doc test checks ```%s blocks", b, b.lang)
		}
	}
}
