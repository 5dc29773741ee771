package shellpolicy

// The denylist below was the rule before the allowlist (safe.go). It is kept
// as an independent oracle for the tests: no command the allowlist covers may
// be one it knows to run code. It is never the rule.

import (
	"path"
	"regexp"
	"strings"
)

// arbitraryCode says why words (a simple command) can run code its prefix
// does not show, or "".
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

func arbitraryCode(words []string) string {
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
		if has("-exec", "-toolexec", "-vettool", "-overlay", "-modfile", "-pgo", "-C") || anyContains(dashed(args), "extld", "-vettool", "-toolexec", "-exec=") {
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
		if !strings.HasPrefix(a, "-") {
			continue // an operand, however it is spelled
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

// dashed are the words of args that a program reads as flags.
func dashed(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}
