// Package shellpolicy decides what a remembered or configured command
// approval covers. It parses command lines with a real shell parser
// (mvdan.cc/sh/v3/syntax), never by splitting strings: an approval covers a
// command only when the command is exactly one simple command of literal
// words that starts, word by word, with the approved words, and does not
// run code given on its own command line (interpreters, wrappers, flags
// such as go test -exec).
//
// The package is pure: no I/O, no state.
package shellpolicy

import (
	"path"
	"regexp"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Command is a parsed command line.
type Command struct {
	Source string
	// Words is the argv of the command when it is one simple command of
	// literal words (Simple); nil otherwise.
	Words []string
	// Simple is true when the line is exactly one simple command: no list,
	// pipeline, substitution, redirection, subshell, here-document,
	// background job, assignment, comment, control character, glob or
	// expansion.
	Simple bool
	// Why says what made it not simple, or why it runs arbitrary code.
	Why string
	// Arbitrary is true when the simple command runs code that no approval
	// of its prefix can vouch for (an interpreter, a wrapper, a flag that
	// names a program, a path in .agentls or .git).
	Arbitrary bool
}

// Parse parses command. It never fails: what it cannot prove simple is
// not Simple.
func Parse(command string) Command {
	c := Command{Source: command}
	if strings.TrimSpace(command) == "" {
		c.Why = "empty command"
		return c
	}
	if i := strings.IndexFunc(command, isControl); i >= 0 {
		c.Why = "contains a control or invisible character"
		return c
	}
	// The line runs with /bin/sh; bash and POSIX parses must both see the
	// same single simple command, so no dialect difference can hide a
	// second one.
	var words []string
	for k, lang := range []syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash} {
		w, why := simpleWords(command, lang)
		if why != "" {
			c.Why = why
			return c
		}
		if k > 0 && !equal(w, words) {
			c.Why = "shells disagree on its words"
			return c
		}
		words = w
	}
	c.Words, c.Simple = words, true
	if why := arbitraryCode(words); why != "" {
		c.Arbitrary, c.Why = true, why
	}
	return c
}

// isControl reports characters that can hide or separate commands or
// change how a line is shown: C0/C1 controls (tab, newline and carriage
// return included) and Unicode format characters (bidi overrides,
// zero-width joiners).
func isControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' || r == unicode.ReplacementChar
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// simpleWords returns the literal argv of command when it parses as one
// simple command in lang, or why it does not.
func simpleWords(command string, lang syntax.LangVariant) ([]string, string) {
	p := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(lang))
	f, err := p.Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, "does not parse as a shell command"
	}
	if len(f.Last) > 0 {
		return nil, "has a comment"
	}
	if len(f.Stmts) != 1 {
		return nil, "is a list of commands"
	}
	st := f.Stmts[0]
	switch {
	case len(st.Comments) > 0:
		return nil, "has a comment"
	case st.Semicolon.IsValid():
		return nil, "is a list of commands"
	case st.Negated:
		return nil, "negates a command"
	case st.Background, st.Coprocess, st.Disown:
		return nil, "runs in the background"
	case len(st.Redirs) > 0:
		return nil, "has a redirection"
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, "is not a simple command (list, pipeline, subshell, block or keyword)"
	}
	if len(call.Assigns) > 0 {
		return nil, "sets variables for the command"
	}
	if len(call.Args) == 0 {
		return nil, "has no command"
	}
	words := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		if why := literalWord(w); why != "" {
			return nil, why
		}
		// Quote removal as the shell does it; no globbing (no ReadDir).
		f, err := expand.Fields(&expand.Config{}, w)
		if err != nil || len(f) != 1 {
			return nil, "has a word that does not expand to itself"
		}
		s := f[0]
		if strings.IndexFunc(s, isControl) >= 0 {
			return nil, "contains a control character"
		}
		words = append(words, s)
	}
	return words, ""
}

// literalWord says why w is not a literal word (one the shell passes on
// unchanged apart from quote removal), or "".
func literalWord(w *syntax.Word) string {
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			// Unquoted: no glob, brace or tilde expansion.
			if strings.ContainsAny(p.Value, "*?[]{}") {
				return "has a glob or brace expansion"
			}
			// Tilde expands at the start of a word and, in bash, after = or :
			// ("HEAD~1" stays literal).
			if (i == 0 && strings.HasPrefix(p.Value, "~")) || strings.Contains(p.Value, "=~") || strings.Contains(p.Value, ":~") {
				return "has a tilde expansion"
			}
			if i == 0 && strings.HasPrefix(p.Value, "#") {
				return "has a comment"
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "has an ANSI-C quoted $'...' word"
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return "has a $\"...\" word"
			}
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return "has an expansion or substitution in double quotes"
				}
			}
		case *syntax.CmdSubst:
			return "has a command substitution"
		case *syntax.ProcSubst:
			return "has a process substitution"
		case *syntax.ParamExp:
			return "has a variable expansion"
		case *syntax.ArithmExp:
			return "has an arithmetic expansion"
		case *syntax.ExtGlob:
			return "has an extended glob"
		default:
			return "has a word that is not literal"
		}
	}
	return ""
}

// subcommand matches a word that names a subcommand ("test", "mod").
var subcommand = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// Prefix is what "Always allow" and "Allow for this task" remember of the
// command: its program and, when the next word is a subcommand, that too
// ("go test" for "go test ./...", "ls" for "ls -la"). It is "" when the
// command is not simple or runs arbitrary code: nothing may be remembered
// for it.
func (c Command) Prefix() string {
	if !c.Simple || c.Arbitrary {
		return ""
	}
	if len(c.Words) >= 2 && subcommand.MatchString(c.Words[1]) {
		return c.Words[0] + " " + c.Words[1]
	}
	return c.Words[0]
}

// CoveredBy reports whether an approval of prefix (a command line, e.g.
// "go test") covers c: c is one simple command, runs no arbitrary code, and
// its words start with the words of prefix ("go test" covers
// "go test ./..." but not "go tester" nor "go test ./... ; rm x").
func (c Command) CoveredBy(prefix string) bool {
	if !c.Simple || c.Arbitrary {
		return false
	}
	p := Parse(prefix)
	if !p.Simple || len(p.Words) > len(c.Words) {
		return false
	}
	for i, w := range p.Words {
		if c.Words[i] != w {
			return false
		}
	}
	return true
}

// Covered reports whether one of prefixes covers command (see CoveredBy).
func Covered(command string, prefixes []string) bool {
	c := Parse(command)
	for _, p := range prefixes {
		if c.CoveredBy(p) {
			return true
		}
	}
	return false
}

// Programs that run code given to them (interpreters, shells), or run
// another program named by their arguments (wrappers): a prefix of theirs
// would cover anything.
var arbitraryPrograms = setOf(
	// shells and shell builtins that run code
	"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox", "rbash", "elvish", "nu", "pwsh", "powershell",
	"exec", "eval", "command", "builtin", "source", ".", "trap", "alias", "fc",
	// interpreters
	"node", "nodejs", "deno", "bun", "perl", "ruby", "irb", "php", "lua", "luajit", "tclsh", "wish", "expect",
	"rscript", "r", "julia", "jshell", "groovy", "osascript", "awk", "gawk", "mawk", "nawk", "busybox",
	"vim", "vi", "nvim", "ex", "view", "emacs", "ed", "gdb", "lldb",
	// wrappers that run another program
	"env", "xargs", "nice", "ionice", "chrt", "taskset", "timeout", "nohup", "sudo", "doas", "su", "runuser", "pkexec",
	"setsid", "unshare", "nsenter", "chroot", "flock", "watch", "parallel", "stdbuf", "time", "strace", "ltrace",
	"script", "systemd-run", "ssh", "docker", "podman", "kubectl", "npx", "pnpx", "bunx", "uvx", "pipx",
	"xdg-open", "open", "entr", "nodemon",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// interpreterPrefix matches versioned interpreters: python3, python3.12,
// pypy3, ruby3.2, perl5.36, php8.
var interpreterPrefix = regexp.MustCompile(`^(python|pypy|ruby|perl|php|node|lua)[0-9.]*$`)

// arbitraryCode says why words (a simple command) can run code its prefix
// does not show, or "".
func arbitraryCode(words []string) string {
	for _, w := range words {
		if touchesProtected(w) {
			return "names a path in .agentls or .git, which commands may not change"
		}
	}
	prog := strings.ToLower(path.Base(words[0]))
	args := words[1:]
	if arbitraryPrograms[prog] || interpreterPrefix.MatchString(prog) {
		return prog + " runs code or programs given on its command line"
	}
	sub := firstOperand(args)
	has := func(flags ...string) bool { return hasFlag(args, flags...) }
	switch prog {
	case "find":
		if has("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls") {
			return "find with -exec, -ok, -delete or -fprint runs programs or changes files"
		}
	case "sed", "gsed":
		if sedRunsCode(args) {
			return "sed with an e or w command, or a script file, can run programs or write files"
		}
	case "git":
		if why := gitArbitrary(args); why != "" {
			return why
		}
	case "go":
		switch sub {
		case "run", "generate", "tool":
			return "go " + sub + " runs a program"
		case "env":
			if has("-w", "-u") {
				return "go env -w changes the settings of every later go command"
			}
		}
		if has("-exec", "-toolexec", "-vettool", "-overlay", "-modfile", "-pgo", "-C") || anyContains(args, "extld", "-vettool", "-toolexec", "-exec=") {
			return "a go flag names a program to run"
		}
	case "npm", "yarn", "pnpm", "cnpm":
		// test and start run the workspace's own scripts, as go test runs
		// its tests; run, exec and friends run any script or package.
		switch sub {
		case "exec", "x", "run", "run-script", "rum", "urn", "dlx", "create", "init", "explore", "node", "why-run":
			return prog + " " + sub + " runs scripts or packages"
		}
		if prog == "yarn" && sub != "" && sub != "test" && sub != "start" && !knownYarn[sub] {
			return "yarn " + sub + " may run a package script"
		}
	case "cargo":
		switch sub {
		case "run", "script", "x":
			return "cargo " + sub + " runs a program"
		}
		if has("--config", "-Z") {
			return "cargo --config can name a program to run"
		}
	case "make", "gmake":
		// make runs the workspace's own Makefile recipes, as go test runs
		// its tests; what may not pass is a recipe given on the command
		// line or a Makefile from elsewhere.
		if has("--eval", "-E", "-f", "--file", "--makefile", "-C", "--directory", "-I", "--include-dir") || anyContains(args, "SHELL=", "MAKEFLAGS=", ".SHELLFLAGS=") {
			return "make with --eval, -f, -C or SHELL= runs recipes the workspace does not hold"
		}
	case "tar", "bsdtar", "gtar":
		if has("--to-command", "--checkpoint-action", "-I", "--use-compress-program", "--info-script", "--new-volume-script", "-F", "--rsh-command") {
			return "tar with --to-command or -I runs programs"
		}
	case "rsync":
		if has("-e", "--rsh", "--rsync-path") {
			return "rsync -e runs programs"
		}
	case "rg":
		if has("--pre", "--search-zip", "-z") {
			return "rg --pre runs programs"
		}
	case "sort":
		if has("--compress-program") {
			return "sort --compress-program runs programs"
		}
	case "man":
		if has("-P", "--pager", "-H", "--html") {
			return "man -P runs programs"
		}
	case "less", "more":
		return prog + " can run shell commands"
	case "pip", "pip3":
		if sub == "install" || sub == "download" || sub == "wheel" {
			return prog + " " + sub + " runs the build scripts of packages"
		}
	case "uv", "poetry", "pdm", "hatch", "pipenv", "conda", "mvn", "gradle", "gradlew", "dotnet", "mix", "bundle", "composer", "swift", "zig":
		switch sub {
		case "run", "exec", "x", "shell", "tool", "script":
			return prog + " " + sub + " runs programs"
		}
		if has("--exec", "-c", "--command") {
			return prog + " with this flag runs programs"
		}
	}
	return ""
}

// knownYarn are yarn subcommands that are not package scripts.
var knownYarn = setOf("install", "add", "remove", "upgrade", "outdated", "list", "info", "why", "audit", "cache", "config", "licenses", "version", "versions", "help", "check", "workspaces")

// firstOperand is the first argument that is not a flag.
func firstOperand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// hasFlag reports whether args hold one of flags, alone or as flag=value,
// with one or two dashes for long Go-style flags, or a single-letter flag
// glued to its value or to other letters (-Ifoo, -xI).
func hasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		if a == "--" {
			// Later words are operands, but a program may still read them
			// as flags (find's -exec follows paths): keep looking.
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		for _, f := range flags {
			if name == f || strings.TrimPrefix(name, "-") == f || "-"+name == f {
				return true
			}
			// Short flags: -I... or a cluster containing the letter.
			if len(f) == 2 && f[0] == '-' && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], rune(f[1])) {
				return true
			}
		}
	}
	return false
}

func anyContains(args []string, subs ...string) bool {
	for _, a := range args {
		for _, s := range subs {
			if strings.Contains(a, s) {
				return true
			}
		}
	}
	return false
}

// touchesProtected reports whether w names .agentls (settings that widen
// approvals) or something inside .git (hooks, config): a path component,
// possibly after an "=" (--file=.agentls/x).
func touchesProtected(w string) bool {
	for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '=' || r == ':' || r == ',' }) {
		comps := strings.Split(part, "/")
		for i, c := range comps {
			if c == ".agentls" {
				return true
			}
			if c == ".git" && i < len(comps)-1 && comps[i+1] != "" {
				return true
			}
		}
	}
	return false
}

// sedRunsCode reports sed scripts that may execute or write: the e and w
// commands and flags, or a script read from a file. It is conservative:
// any script holding an e, w or W letter outside a s/// pattern is asked.
func sedRunsCode(args []string) bool {
	var scripts []string
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f" || strings.HasPrefix(a, "--file") || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "f")):
			return true
		case a == "-e" || a == "--expression":
			explicit = true
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--expression="):
			explicit = true
			scripts = append(scripts, strings.TrimPrefix(a, "--expression="))
		case strings.HasPrefix(a, "-e") && len(a) > 2:
			explicit = true
			scripts = append(scripts, a[2:])
		}
	}
	if !explicit {
		if s := firstOperand(args); s != "" {
			scripts = append(scripts, s)
		}
	}
	for _, s := range scripts {
		if strings.ContainsAny(s, "ewW") {
			return true
		}
	}
	return false
}

// gitSafe are git subcommands that run no program named by the command
// line or by settings a command could have changed. Others (config,
// aliases, rebase --exec, bisect run, submodule foreach, fetch
// --upload-pack, filter-branch, difftool, ...) are asked each time.
var gitSafe = setOf("status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "blame", "grep", "add", "commit",
	"stash", "tag", "describe", "shortlog", "reflog", "cat-file", "rev-list", "show-ref", "ls-tree", "merge-base",
	"version", "help", "checkout", "switch", "restore", "mv", "rm", "reset", "init", "whatchanged", "range-diff", "name-rev", "check-ignore", "count-objects", "fsck")

func gitArbitrary(args []string) string {
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		switch args[i] {
		case "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects":
		default:
			return "git " + args[i] + " can change what git runs"
		}
	}
	if i == len(args) {
		return ""
	}
	sub := args[i]
	if !gitSafe[sub] {
		return "git " + sub + " may be an alias or run programs"
	}
	rest := args[i+1:]
	if hasFlag(rest, "-O", "--open-files-in-pager", "--ext-diff", "--exec", "-x", "--upload-pack", "--receive-pack", "--template", "--separate-git-dir", "--git-dir", "--work-tree") {
		return "git " + sub + " with this flag runs programs"
	}
	return ""
}
