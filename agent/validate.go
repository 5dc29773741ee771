package agent

import (
	"bytes"
	"context"
	"encoding/json"

	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/netproxy"
)

// ValidateMode says when the validator model call runs.
type ValidateMode string

const (
	ValidateOff   ValidateMode = "off"   // never
	ValidateOn    ValidateMode = "on"    // for every task
	ValidateEdits ValidateMode = "edits" // for edit tasks only (the default)
)

// callRecord is one tool call as validation sees it: the evidence.
type callRecord struct {
	Tool     string
	Args     string
	IsError  bool
	Evidence string // the command and the tail of its real output, or the tail of the result
	// Scope is the folder or file a search covered, as the tool resolved
	// it ("" for the whole workspace); valid when HasScope. Calls restored
	// from the session store only have Args.
	Scope    string
	HasScope bool
	// Partial marks a search that stopped before covering its scope
	// (grep's total cap), so its "no match" is not evidence.
	Partial bool
}

// searchRecord fills the scope of a list_files or grep call from what the
// tool reported it searched.
func searchRecord(r *callRecord, data any) {
	switch d := data.(type) {
	case *tools.GrepOutput:
		scope := d.Scope
		if i := strings.Index(scope, " (files matching"); i >= 0 {
			scope = scope[:i]
		}
		if scope == "the workspace" {
			scope = ""
		}
		r.Scope, r.HasScope, r.Partial = strings.TrimSuffix(scope, "/"), true, !d.Complete
	case *tools.ListFilesOutput:
		r.Scope, r.HasScope = globPrefix(d.Pattern), true
	}
}

// globPrefix is the folder part of a workspace-relative glob before its
// first wildcard segment: "vendor/**/*.go" -> "vendor", "**/*.go" -> "".
func globPrefix(glob string) string {
	segs := strings.Split(glob, "/")
	var keep []string
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[{") {
			break
		}
		if i == len(segs)-1 {
			keep = append(keep, s) // a plain file path
			break
		}
		keep = append(keep, s)
	}
	return strings.ReplaceAll(strings.Join(keep, "/"), `\`, "")
}

// claimRE matches a sentence that claims an empty result of a search:
// nothing found, no such files, not used anywhere. Only the things a
// search finds count (files, matches, usages, callers, ...): "no other bug
// found" is a judgement of code, not a search result.
var claimRE = lazyregexp.New(`(?i)\b(no|none)\b[^\n]{0,40}?\b(files?|matches|results|occurrences?|usages?|callers?|references?|imports?|definitions?|implementations?|instances?|mentions?|tests)\b` +
	`|\b(0|zero) (files|matches|results|occurrences|usages|callers|references)\b` +
	`|\bnothing (was |is )?(found|matched)\b|\bfound nothing\b|\bno match(es)?\b` +
	`|\b(could not|couldn't|cannot|can't|did not|didn't|was unable to|were unable to) (find|locate)\b` +
	`|\bthere (are|is|were|was) no\b[^\n]{0,30}?\b(such|files?|match|matches|results?|occurrences?|usages?|uses|callers?|references?|calls?|tests?|instances?|definitions?|imports?|mentions?)\b` +
	`|\bnot\b[^\n]{0,20}?\b(called|used|referenced|present|found|defined|imported|mentioned)\b` +
	`|\bnever (called|used|referenced)\b` +
	`|\bno (usages?|uses|callers?|references?|occurrences?|matches|results?|calls?)\b`)

// conditionalRE marks a clause that describes what code does ("returns 0
// when no files match"), not what a search found.
var conditionalRE = lazyregexp.New(`(?i)\b(if|when|whenever|unless|until|while|returns?|returning|otherwise|in case)\b`)

// sentenceEnd splits an answer into sentences. A dot inside a word
// (".go", "main.go") does not end a sentence.
var sentenceEnd = lazyregexp.New(`[.!?;]+(\s|$)|\n+`)

// codeRE matches what an answer quotes rather than says: fenced blocks and
// code spans. A quoted `errors.New("not found")` claims nothing.
var codeRE = lazyregexp.New("(?s)```.*?(```|$)|`[^`\n]*`")

// prose is answer without the code it quotes (each quote left as "code",
// so a sentence keeps its shape).
func prose(answer string) string { return codeRE.ReplaceAllString(answer, "code") }

// nothingClaims returns the sentences of answer that say a search came up
// empty, outside a clause that describes code behaviour and outside
// quoted code.
func nothingClaims(answer string) []string {
	var out []string
	for _, s := range sentenceEnd.Split(prose(answer), -1) {
		loc := claimRE.FindStringIndex(s)
		if loc == nil {
			continue
		}
		if !conditionalRE.MatchString(s[:loc[0]]) {
			out = append(out, s)
		}
	}
	return out
}

// claimsNothing reports whether some sentence of answer says a search came
// up empty.
func claimsNothing(answer string) bool { return len(nothingClaims(answer)) > 0 }

// wideClaimRE marks a claim about more than the code at hand.
var wideClaimRE = lazyregexp.New(`(?i)\b(anywhere|elsewhere|everywhere|workspace|project|repo|repository|codebase|code base|directory|folder|outside)\b`)

// widerScopeRE marks a prompt that asks beyond the code in the editor.
var widerScopeRE = lazyregexp.New(`(?i)\b(workspace|project|repo|repository|codebase|code base|anywhere|elsewhere|everywhere|other files?|all files|callers?|usages?|references?|who calls|where)\b`)

// searchTools are the tools whose clean result counts as a real search over
// the workspace: they are recursive and gitignore-aware by design.
var searchTools = map[string]bool{"list_files": true, "grep": true}

// scopeArgs are the argument names (and the tools' aliases of "path") that
// name a search scope, for calls known only by their arguments.
var scopeArgs = []string{"path", "dir", "folder", "directory", "dir_path", "file", "file_path", "filepath", "relative_path"}

// evidenceGap returns why an answer that claims "nothing found" is not
// backed by a real search, or "" when it is fine. A search counts when
// a list_files or grep call ran without error, over its whole scope, over
// the workspace or a path the task names (in its prompt, or its current
// file). A question about the selected code, answered from the selection,
// needs no search: the selection is its scope.
func evidenceGap(answer string, spec TaskSpec, calls []callRecord) string {
	claims := nothingClaims(answer)
	if len(claims) == 0 {
		return ""
	}
	if !widerScopeRE.MatchString(spec.Prompt) {
		if strings.TrimSpace(spec.Context.Selection) != "" {
			return ""
		}
		// A claim about the code the task read ("err is not used after the
		// check", "none of the callers drain it"): the reading is its
		// evidence, as long as no claim reaches beyond it.
		if readCode(calls) && !slices.ContainsFunc(claims, wideClaimRE.MatchString) {
			return ""
		}
	}
	for _, c := range calls {
		if !searchTools[c.Tool] || c.IsError || c.Partial {
			continue
		}
		scope := c.Scope
		if !c.HasScope {
			var a map[string]any
			_ = json.Unmarshal([]byte(c.Args), &a)
			for _, k := range scopeArgs {
				if v, ok := a[k].(string); ok && v != "" {
					scope = v
					break
				}
			}
		}
		scope = strings.Trim(strings.TrimPrefix(strings.TrimSpace(scope), "./"), "/")
		if scope == "" || scope == "." || namesPath(spec, scope) {
			return ""
		}
	}
	return "Your answer says nothing was found, but no search over the workspace backs it: " +
		"shell commands like find or ls are not a search of the workspace. " +
		"Run list_files (recursive, respects .gitignore) or grep over the workspace, then answer from its result."
}

// readCode reports whether the task read a file.
func readCode(calls []callRecord) bool {
	return slices.ContainsFunc(calls, func(c callRecord) bool { return c.Tool == "read_file" && !c.IsError })
}

// namesPath reports whether the task names scope: as a whole path in its
// prompt, or as its current file or one of that file's folders.
func namesPath(spec TaskSpec, scope string) bool {
	if f := strings.Trim(strings.TrimPrefix(spec.Context.File, "./"), "/"); f != "" && (f == scope || strings.HasPrefix(f, scope+"/")) {
		return true
	}
	re, err := regexp.Compile(`(^|[^\w./-])\.?/?` + regexp.QuoteMeta(scope) + `/?($|[^\w/-]|\.(\s|$))`)
	return err == nil && re.MatchString(spec.Prompt)
}

// verdict is the validator model's judgement. A reply that is neither a
// pass nor a fail is Unreadable: the validator is a second opinion on work
// that already passed the deterministic gates, so model noise must not send
// finished work back for another round.
type verdict struct {
	Pass       bool
	Unreadable bool
	Reason     string
}

const validatorPrompt = `You check the work of a coding agent. You get the task, the agent's final answer, its plan, and the evidence: every tool call with the tail of its real output.
Judge only from the evidence. Accept "nothing found" only when a real search (list_files or grep) ran over the right scope and returned nothing.
Reply with exactly one line: "PASS" or "FAIL: <what is wrong and what to do>".`

// validatorRequest builds the validator call: a fresh, tool-less
// conversation with the evidence inline.
func validatorRequest(spec TaskSpec, answer, plan string, calls []callRecord, changed []FileChange) llm.Request {
	var b strings.Builder
	fmt.Fprintf(&b, "Task (%s): %s\n\nFinal answer:\n%s\n", spec.Kind, spec.Prompt, answer)
	if plan != "" {
		fmt.Fprintf(&b, "\nPlan:\n%s", plan)
	}
	if len(changed) > 0 {
		b.WriteString("\nFiles changed:\n")
		for _, c := range changed {
			fmt.Fprintf(&b, "%s\n%s\n", c.Path, tail(c.Diff, 1500))
		}
	}
	b.WriteString("\nEvidence (tool calls in order):\n")
	if len(calls) == 0 {
		b.WriteString("(no tool was called)\n")
	}
	for i, c := range calls {
		status := "ok"
		if c.IsError {
			status = "error"
		}
		fmt.Fprintf(&b, "%d. %s %s [%s]\n%s\n", i+1, c.Tool, clip(oneLine(c.Args), 200), status, indent(tail(c.Evidence, 800)))
	}
	return llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: validatorPrompt},
		{Role: llm.RoleUser, Content: b.String()},
	}}
}

// parseVerdict reads the validator's reply: its first line, or else its
// last line (models often reason first and conclude with the verdict).
func parseVerdict(text string) verdict {
	v := parseVerdictLine(text)
	if v.Unreadable {
		lines := strings.Split(strings.TrimSpace(text), "\n")
		if last := lines[len(lines)-1]; len(lines) > 1 {
			if lv := parseVerdictLine(last); !lv.Unreadable {
				return lv
			}
		}
	}
	return v
}

func parseVerdictLine(text string) verdict {
	t := strings.TrimSpace(strings.Trim(strings.TrimSpace(text), "`*\"'"))
	u := strings.ToUpper(t)
	for _, w := range []string{"PASS", "ACCEPT", "APPROVE", "LGTM"} {
		if strings.HasPrefix(u, w) {
			return verdict{Pass: true}
		}
	}
	for _, w := range []string{"FAIL", "REJECT"} {
		if strings.HasPrefix(u, w) {
			rest := t[len(w):]
			for _, suffix := range []string{"ED", "S"} { // FAILED, FAILS, REJECTED
				if len(rest) >= len(suffix) && strings.EqualFold(rest[:len(suffix)], suffix) {
					rest = rest[len(suffix):]
					break
				}
			}
			reason := strings.TrimSpace(strings.TrimLeft(rest, ":.-— "))
			if reason == "" {
				reason = "the validator rejected the result without a reason"
			}
			return verdict{Reason: reason}
		}
	}
	return verdict{Pass: true, Unreadable: true, Reason: clip(oneLine(t), 200)}
}

// Checker runs the workspace's check command (e.g. `go build ./...`).
type Checker interface {
	Check(ctx context.Context) (ok bool, output string, err error)
}

// ShellCheck runs Command with sh -c in Dir through tools.Run, the one
// runner of every command: the same sandbox, an environment without
// agentls's secrets, and no process left when it ends, is cancelled or
// times out.
type ShellCheck struct {
	Dir       string
	Command   string
	Timeout   time.Duration // 0 means 5 minutes
	SecretEnv []string      // names of further variables to keep from it (the API key variable)
	// Sandbox is the sandbox setting ("workspace-write", the default, or
	// "off"); Network allows TCP; Roots are the writable workspace roots
	// (nil: Dir).
	Sandbox string
	Network bool
	// Proxy is the allowlist proxy when the network is a list of domains
	// (tools.SandboxOptions.Proxy); nil: none.
	Proxy *netproxy.Proxy
	Roots []string
}

// Check runs the command; ok is false on a non-zero exit, output holds
// stdout and stderr. err is for failing to run at all.
func (c ShellCheck) Check(ctx context.Context) (bool, string, error) {
	to := c.Timeout
	if to == 0 {
		to = 5 * time.Minute
	}
	roots := c.Roots
	if roots == nil {
		roots = []string{c.Dir}
	}
	var out lockedBuffer
	res, err := tools.Run(ctx, tools.RunSpec{
		Argv: []string{"sh", "-c", c.Command}, Dir: c.Dir, SecretEnv: c.SecretEnv,
		Stdout: &out, Stderr: &out, Timeout: to,
		Sandbox: tools.SandboxOptions{Mode: c.Sandbox, Network: c.Network, Proxy: c.Proxy, Roots: roots},
	})
	if err != nil {
		return false, "", fmt.Errorf("check %q: %w", c.Command, err)
	}
	switch {
	case res.TimedOut:
		return false, out.String(), fmt.Errorf("check %q: %w", c.Command, context.DeadlineExceeded)
	case res.Cancelled:
		if ctx.Err() != nil {
			return false, out.String(), fmt.Errorf("check %q: %w", c.Command, ctx.Err())
		}
		return false, out.String(), fmt.Errorf("check %q: %w", c.Command, context.Canceled)
	case res.ExitCode != 0 || res.Signal != "":
		status := fmt.Sprintf("exit %d", res.ExitCode)
		if res.Signal != "" {
			status = "killed by " + res.Signal
		}
		return false, fmt.Sprintf("$ %s\n%s\n%s", c.Command, status, tail(out.String(), 4000)), nil
	}
	return true, out.String(), nil
}

// lockedBuffer is a bytes.Buffer both output streams write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "   (no output)"
	}
	return "   " + strings.ReplaceAll(s, "\n", "\n   ")
}
