package shellpolicy

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A Policy is the allowlist of safe commands: entries of leading words
// ("go test", "git diff", "ls"), each with the rule its further words must
// pass. A Policy is immutable once built; its methods are safe for
// concurrent use.
type Policy struct {
	// entries by their first word; each list longest key first, so that
	// "go mod tidy" is matched before a shorter key.
	entries map[string][]entry
}

// entry is one safe command: the leading words and the rule for the rest.
type entry struct {
	words []string
	rule  rule
}

func (e entry) key() string { return strings.Join(e.words, " ") }

// flagKind says whether a flag takes a value.
type flagKind uint8

const (
	boolFlag  flagKind = iota // -v, --stat
	valueFlag                 // -run X, -run=X, -n5 (GNU short, glued)
	optFlag                   // --porcelain or --porcelain=v2, -uno; never the next word
)

// style is how a program parses its flags.
type style uint8

const (
	// goStyle: -name or --name, a value as -name=X or the next word, no
	// clusters of short flags (the Go flag package, find's primaries).
	goStyle style = iota
	// gnuStyle: --long[=X] and clusters of one-letter flags (-la), where a
	// letter that takes a value takes the rest of the word or the next
	// word (getopt_long).
	gnuStyle
)

// rule is what the words after an entry's words may be. The zero rule
// allows no further word.
type rule struct {
	style style
	// flags are the flags that pass, with their dashes ("-run", "--stat",
	// "-n").
	flags map[string]flagKind
	// anyFlag: every flag passes (programs that have no flag that runs or
	// loads code: ls, cat, wc).
	anyFlag bool
	// operands: words that are not flags pass (paths, packages, patterns).
	operands bool
	// noAssign: an operand may not hold "=" (make reads VAR=value, and
	// SHELL=... runs a program).
	noAssign bool
	// dashDash: "--" passes and every later word is an operand.
	dashDash bool
}

// passes reports whether words (what follows the entry's words) pass r,
// or why not.
func (r rule) passes(words []string) string {
	operandsOnly := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case operandsOnly || w == "-" || !strings.HasPrefix(w, "-"):
			if !r.operands {
				return fmt.Sprintf("takes no operand %q", w)
			}
			if r.noAssign && strings.Contains(w, "=") {
				return fmt.Sprintf("%q sets a variable", w)
			}
		case w == "--":
			if !r.dashDash {
				return `takes no "--"`
			}
			operandsOnly = true
		case r.anyFlag:
		default:
			next, why := r.flag(w)
			if why != "" {
				return why
			}
			if next {
				i++
				if i == len(words) {
					return fmt.Sprintf("%s lacks its value", w)
				}
				// A value that looks like a flag is where parsers disagree
				// (is "-exec" a value or a flag?): not covered.
				if strings.HasPrefix(words[i], "-") {
					return fmt.Sprintf("the value of %s looks like a flag", w)
				}
			}
		}
	}
	return ""
}

// flag checks one flag word; next reports that its value is the next
// word.
func (r rule) flag(w string) (next bool, why string) {
	unknown := func(f string) (bool, string) { return false, fmt.Sprintf("flag %s is not on the safe list", f) }
	if kind, ok := r.flags[w]; ok && kind == boolFlag {
		return false, "" // a flag listed whole: git log -10
	}
	if r.style == goStyle || strings.HasPrefix(w, "--") {
		name, _, hasValue := strings.Cut(w, "=")
		kind, ok := r.flags[name]
		if !ok && r.style == goStyle {
			// The Go flag package reads -x and --x alike.
			if strings.HasPrefix(name, "--") {
				kind, ok = r.flags[name[1:]]
			} else {
				kind, ok = r.flags["-"+name]
			}
		}
		switch {
		case !ok:
			return unknown(name)
		case kind == valueFlag:
			return !hasValue, ""
		case kind == boolFlag && hasValue && r.style == gnuStyle:
			return unknown(w)
		}
		return false, ""
	}
	// A cluster of one-letter flags: -la, -n5, -C3.
	for j := 1; j < len(w); j++ {
		f := "-" + string(w[j])
		kind, ok := r.flags[f]
		if !ok {
			return unknown(f)
		}
		if kind != boolFlag {
			// The rest of the word is the value; a value flag with none
			// takes the next word.
			return kind == valueFlag && j == len(w)-1, ""
		}
	}
	return false, ""
}

// flags builds a flag table: names ending in "=" take a value, names
// ending in "?" take an optional glued value, others none.
func flags(names ...string) map[string]flagKind {
	m := make(map[string]flagKind, len(names))
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "="):
			m[strings.TrimSuffix(n, "=")] = valueFlag
		case strings.HasSuffix(n, "?"):
			m[strings.TrimSuffix(n, "?")] = optFlag
		default:
			m[n] = boolFlag
		}
	}
	return m
}

// merge joins flag tables.
func merge(tables ...map[string]flagKind) map[string]flagKind {
	m := map[string]flagKind{}
	for _, t := range tables {
		for k, v := range t {
			m[k] = v
		}
	}
	return m
}

// Flags of the go command that change no program run: build flags without
// -exec, -toolexec, -vettool, -overlay, -modfile, -pgo, -C, -ldflags (whose
// -extld names a linker) and friends.
var goBuildFlags = flags("-v", "-race", "-tags=", "-trimpath", "-mod=", "-a", "-n", "-x", "-p=", "-cover", "-covermode=",
	"-coverpkg=", "-buildvcs=", "-work", "-json")

var goTestFlags = merge(goBuildFlags, flags("-run=", "-skip=", "-count=", "-short", "-timeout=", "-bench=", "-benchtime=",
	"-benchmem", "-failfast", "-list=", "-cpu=", "-parallel=", "-shuffle=", "-coverprofile=", "-fullpath", "-vet=", "-c", "-o="))

// gitView are the flags of git's read-only views (log, diff, show) that run
// nothing: no --ext-diff, --textconv, -O, --output.
var gitView = flags("-p", "--patch", "-s", "--no-patch", "-U=", "--unified=", "--stat?", "--numstat", "--shortstat", "--name-only",
	"--name-status", "--summary", "--raw", "-z", "--oneline", "--graph", "--decorate?", "--no-decorate", "--all", "-n=",
	"--max-count=", "--skip=", "--since=", "--after=", "--until=", "--before=", "--author=", "--committer=", "--grep=",
	"-i", "--regexp-ignore-case", "-S=", "-G=", "--pickaxe-all", "--format=", "--pretty?", "--abbrev-commit", "--abbrev?",
	"--no-color", "--color?", "--cached", "--staged", "--no-ext-diff", "--no-textconv", "-w", "--ignore-all-space", "-b",
	"--ignore-space-change", "--word-diff?", "--color-words?", "--reverse", "--first-parent", "--merges", "--no-merges",
	"--follow", "-M?", "--find-renames?", "--no-renames", "--relative?", "--full-index", "--check", "-R", "--exit-code",
	"--quiet", "--date=", "--topo-order", "--date-order", "--left-right", "--cherry-pick", "--boundary", "--dirstat?",
	"--minimal", "--patience", "--histogram", "--diff-filter=", "--name-status", "--no-prefix", "--src-prefix=",
	"--dst-prefix=", "--stat-width=", "--oneline", "--parents", "--children", "--no-walk?", "--no-abbrev", "-1", "-2",
	"-3", "-5", "-10")

var gitStatus = flags("-s", "--short", "-b", "--branch", "--porcelain?", "--long", "-v", "--verbose", "-u?",
	"--untracked-files?", "--ignored?", "-z", "--no-renames", "--renames", "--ahead-behind", "--no-ahead-behind",
	"--show-stash", "--no-column")

var gitBranch = flags("-a", "--all", "-r", "--remotes", "-v", "--verbose", "-l", "--list", "--show-current",
	"--contains=", "--no-contains=", "--merged?", "--no-merged?", "--sort=", "--points-at=", "--no-color", "--color?",
	"--format=", "--column?", "--no-column")

// gnuAny is the rule of a program with no flag that runs or loads code.
var gnuAny = rule{style: gnuStyle, anyFlag: true, operands: true, dashDash: true}

// builtin is the default allowlist. Keep each entry's reason next to it:
// an entry belongs here only when no word after it can make the program
// run another program or code named on the command line.
var builtin = []struct {
	key  string
	rule rule
}{
	// The go command. build, test and vet run the workspace's code and
	// compilers by design (tests, cgo): the sandbox contains them.
	{"go build", rule{flags: merge(goBuildFlags, flags("-o=")), operands: true}},
	{"go test", rule{flags: goTestFlags, operands: true}},
	{"go vet", rule{flags: flags("-v", "-tags=", "-mod=", "-json", "-n", "-x", "-c="), operands: true}},
	{"go list", rule{flags: flags("-json?", "-m", "-f=", "-deps", "-test", "-e", "-u", "-versions", "-tags=", "-mod=", "-find", "-export", "-compiled"), operands: true}},
	{"go fmt", rule{flags: flags("-n", "-x", "-mod="), operands: true}},
	{"go version", rule{flags: flags("-m", "-v"), operands: true}},
	{"go env", rule{flags: flags("-json", "-changed"), operands: true}},
	{"go doc", rule{flags: flags("-all", "-src", "-u", "-c", "-short", "-cmd"), operands: true}},
	{"go mod tidy", rule{flags: flags("-v", "-e", "-diff", "-go=", "-compat=")}},
	{"go mod graph", rule{}},
	{"go mod verify", rule{}},
	{"go mod why", rule{flags: flags("-m", "-vendor"), operands: true}},
	{"gofmt", rule{style: gnuStyle, flags: flags("-l", "-d", "-s", "-e"), operands: true}},

	// git views. With a hostile repository configuration (textconv, diff
	// drivers, fsmonitor) even these run programs: the sandbox, not the
	// approval, contains them. No global option (-c, -C, --exec-path)
	// passes: the entry's words must follow "git" directly.
	{"git status", rule{style: gnuStyle, flags: gitStatus, operands: true, dashDash: true}},
	{"git diff", rule{style: gnuStyle, flags: gitView, operands: true, dashDash: true}},
	{"git log", rule{style: gnuStyle, flags: gitView, operands: true, dashDash: true}},
	{"git show", rule{style: gnuStyle, flags: gitView, operands: true, dashDash: true}},
	{"git branch", rule{style: gnuStyle, flags: gitBranch, operands: true}},
	{"git rev-parse", rule{style: gnuStyle, flags: flags("--show-toplevel", "--abbrev-ref?", "--short?", "--verify", "-q", "--quiet", "--is-inside-work-tree", "--symbolic-full-name"), operands: true, dashDash: true}},
	{"git ls-files", rule{style: gnuStyle, flags: flags("-c", "--cached", "-m", "--modified", "-o", "--others", "-d", "--deleted", "--exclude-standard", "-z", "-s", "--stage", "--full-name"), operands: true, dashDash: true}},

	// Programs that read and print, and have no flag that runs code.
	{"ls", gnuAny}, {"cat", gnuAny}, {"head", gnuAny}, {"tail", gnuAny}, {"wc", gnuAny},
	{"pwd", gnuAny}, {"echo", gnuAny}, {"stat", gnuAny}, {"du", gnuAny}, {"df", gnuAny},
	{"cut", gnuAny}, {"uniq", gnuAny}, {"nl", gnuAny}, {"basename", gnuAny}, {"dirname", gnuAny},
	{"realpath", gnuAny}, {"which", gnuAny}, {"uname", gnuAny}, {"true", gnuAny}, {"diff", gnuAny},
	{"cmp", gnuAny}, {"grep", gnuAny},
	// Programs that make files and run nothing.
	{"touch", gnuAny}, {"mkdir", gnuAny},
	// sort has --compress-program, rg has --pre and --search-zip, find has
	// -exec and -delete: only the flags below pass.
	{"sort", rule{style: gnuStyle, flags: flags("-n", "-r", "-u", "-f", "-h", "-V", "-b", "-s", "-k=", "-t=", "-o=",
		"--numeric-sort", "--reverse", "--unique", "--ignore-case", "--human-numeric-sort", "--version-sort", "--stable", "--key=", "--field-separator="), operands: true, dashDash: true}},
	{"rg", rule{style: gnuStyle, flags: flags("-n", "-N", "-i", "-S", "-s", "-w", "-x", "-l", "-c", "-F", "-v", "-o", "-H", "-I", "-e=", "-g=",
		"-t=", "-T=", "-A=", "-B=", "-C=", "-m=", "-u", "--line-number", "--no-line-number", "--ignore-case", "--smart-case",
		"--case-sensitive", "--word-regexp", "--files-with-matches", "--files-without-match", "--count", "--fixed-strings",
		"--invert-match", "--only-matching", "--regexp=", "--glob=", "--iglob=", "--type=", "--type-not=", "--context=",
		"--after-context=", "--before-context=", "--max-count=", "--hidden", "--no-ignore", "--files", "--json", "--vimgrep",
		"--no-heading", "--heading", "--color=", "--max-depth=", "--sort=", "--type-list", "--trim", "--multiline", "-U",
		"--stats", "--no-messages"), operands: true, dashDash: true}},
	{"find", rule{flags: flags("-name=", "-iname=", "-path=", "-ipath=", "-type=", "-maxdepth=", "-mindepth=", "-newer=",
		"-mtime=", "-mmin=", "-size=", "-print", "-print0", "-not", "-o", "-or", "-a", "-and", "-empty", "-perm=", "-regex=",
		"-iregex=", "-user=", "-group=", "-links=", "-readable", "-writable", "-executable", "-prune", "-L", "-H", "-P",
		"-xdev", "-depth"), operands: true}},

	// Builds and tests in other ecosystems: they run the workspace's code
	// (build.rs, package scripts, conftest.py, the Makefile) by design.
	{"cargo build", rule{flags: cargoFlags, operands: false}},
	{"cargo check", rule{flags: cargoFlags}},
	{"cargo test", rule{flags: cargoFlags, operands: true}},
	{"npm test", rule{}},
	{"pytest", rule{style: gnuStyle, flags: flags("-q", "-v", "-x", "-s", "-k=", "-m=", "--maxfail=", "--lf", "--ff", "-r=",
		"--tb=", "--co", "--collect-only", "--durations=", "--exitfirst", "--quiet", "--verbose", "--no-header"), operands: true, dashDash: true}},
	// make runs the Makefile's recipes; --eval, -f, -C, -I and VAR=value
	// (SHELL=...) would run recipes the workspace does not hold.
	{"make", rule{style: gnuStyle, flags: flags("-j?", "-k", "-n", "-s", "-q", "-B", "--keep-going", "--dry-run",
		"--just-print", "--silent", "--question", "--always-make", "--jobs?"), operands: true, noAssign: true}},
}

// cargoFlags pass for cargo build, check and test; no --config (it can
// name programs: runners, linkers) and no -Z.
var cargoFlags = flags("--release", "-r", "-p=", "--package=", "--workspace", "--all", "--features=", "-F=", "--all-features",
	"--no-default-features", "--lib", "--bins", "--tests", "--examples", "--all-targets", "-v", "-q", "--verbose", "--quiet",
	"--locked", "--offline", "--frozen", "-j=", "--jobs=", "--no-fail-fast", "--doc")

var (
	defaultOnce sync.Once
	defaultPol  *Policy
)

// Default is the built-in allowlist.
func Default() *Policy {
	defaultOnce.Do(func() {
		defaultPol = &Policy{entries: map[string][]entry{}}
		for _, b := range builtin {
			defaultPol.add(entry{words: strings.Fields(b.key), rule: b.rule})
		}
	})
	return defaultPol
}

func (p *Policy) add(e entry) {
	list := append(p.entries[e.words[0]], e)
	slices.SortStableFunc(list, func(a, b entry) int { return len(b.words) - len(a.words) })
	p.entries[e.words[0]] = list
}

// With returns a policy that also holds the user's own safe commands
// (the user setting safeCommands): each is the leading words of a command
// ("mytool lint") whose further words, any of them, the user vouches run
// no code named on the command line. An entry that does not parse as one
// simple command of literal words is returned as an error and left out.
func (p *Policy) With(user []string) (*Policy, []error) {
	if len(user) == 0 {
		return p, nil
	}
	q := &Policy{entries: make(map[string][]entry, len(p.entries)+len(user))}
	for k, v := range p.entries {
		q.entries[k] = slices.Clone(v)
	}
	var errs []error
	for _, u := range user {
		c := Parse(u)
		if !c.Simple || c.Protected {
			errs = append(errs, fmt.Errorf("safe command %q: %s", u, c.Why))
			continue
		}
		q.add(entry{words: c.Words, rule: rule{style: gnuStyle, anyFlag: true, operands: true, dashDash: true}})
	}
	return q, errs
}

// match is the entry c starts with, and whether the rest of its words
// pass the entry's rule; why says what did not pass.
func (p *Policy) match(c Command) (e entry, ok bool, why string) {
	if !c.Simple {
		return entry{}, false, c.Why
	}
	if c.Protected {
		return entry{}, false, c.Why
	}
	for _, cand := range p.entries[c.Words[0]] {
		if len(cand.words) > len(c.Words) || !slices.Equal(cand.words, c.Words[:len(cand.words)]) {
			continue
		}
		if why := cand.rule.passes(c.Words[len(cand.words):]); why != "" {
			return cand, false, cand.key() + ": " + why
		}
		return cand, true, ""
	}
	return entry{}, false, c.Words[0] + " is not on the list of safe commands"
}

// Safe reports whether c is a safe command under p, or why not.
func (p *Policy) Safe(c Command) (bool, string) {
	_, ok, why := p.match(c)
	return ok, why
}

// Prefix is what "Always allow" and "Allow for this task" remember of c:
// the words of the safe-command entry it passes ("go test" for
// "go test -run X ./...", "ls" for "ls -la"), or "" when c is not a safe
// command: nothing may be remembered for it.
func (p *Policy) Prefix(c Command) string {
	e, ok, _ := p.match(c)
	if !ok {
		return ""
	}
	return e.key()
}

// Covers reports whether an approval of one of prefixes (command lines,
// e.g. "go test") covers c: c is a safe command under p, and its words
// start with the words of the prefix ("go test" covers "go test ./..." but
// not "go tester", "go test ./... ; rm x" nor "go test -exec sh"). A
// prefix that is not itself simple covers nothing.
func (p *Policy) Covers(c Command, prefixes []string) bool {
	if ok, _ := p.Safe(c); !ok {
		return false
	}
	for _, prefix := range prefixes {
		pw := Parse(prefix)
		if !pw.Simple || len(pw.Words) > len(c.Words) {
			continue
		}
		if slices.Equal(pw.Words, c.Words[:len(pw.Words)]) {
			return true
		}
	}
	return false
}
