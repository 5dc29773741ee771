// Package shellpolicy decides what a remembered or configured command
// approval covers. It parses command lines with a real shell parser
// (mvdan.cc/sh/v3/syntax), never by splitting strings, and it decides by
// an allowlist, never by a list of dangerous programs: an approval covers a
// command only when the command is exactly one simple command of literal
// words that starts, word by word, with the approved words, and that is a
// safe command: it starts with the words of an entry of the Policy (a
// program and subcommand known not to run code named by its arguments,
// "go test", "git diff", "ls") and every further word passes that entry's
// rule (for go test: -run, -v, -count, -race ... and package patterns;
// never -exec, -toolexec or -vettool). Anything else is asked every time.
//
// Safe is about the command line only. Build and test commands run the
// workspace's own code by design (go test runs the tests, make the
// Makefile, npm test the package scripts), and a hostile repository
// configuration can make even git diff run a program: what contains them
// is the sandbox, not the approval.
//
// The package is pure: no I/O, no state.
package shellpolicy

import (
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
	// Why says what made it not simple, or why no approval may cover it.
	Why string
	// Protected is true when a word names a path in .agentls or .git
	// (settings, hooks, config), which no approval covers.
	Protected bool
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
	for _, w := range words {
		if touchesProtected(w) {
			c.Protected, c.Why = true, "names a path in .agentls or .git, which commands may not change"
			break
		}
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

// Prefix is what "Always allow" and "Allow for this task" remember of the
// command under the built-in policy (see Policy.Prefix).
func (c Command) Prefix() string { return Default().Prefix(c) }

// CoveredBy reports whether an approval of prefix covers c under the
// built-in policy (see Policy.Covers).
func (c Command) CoveredBy(prefix string) bool { return Default().Covers(c, []string{prefix}) }

// Covered reports whether one of prefixes covers command under the
// built-in policy.
func Covered(command string, prefixes []string) bool {
	return Default().Covers(Parse(command), prefixes)
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
