package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agentls/agentls/agent/llm"
)

// ValidateMode says when the validator model call runs.
type ValidateMode string

const (
	ValidateOff   ValidateMode = "off"   // never
	ValidateOn    ValidateMode = "on"    // for every task
	ValidateEdits ValidateMode = "edits" // for edit tasks only (the default)
)

// callRecord is one tool call as validation sees it: the evidence (L7).
type callRecord struct {
	Tool     string
	Args     string
	IsError  bool
	Evidence string // the command and the tail of its real output, or the tail of the result
}

// nothingFoundRE matches answers that claim an empty result.
var nothingFoundRE = regexp.MustCompile(`(?i)\b(no|none|nothing|zero|0)\b[^.\n]{0,40}\b(found|match|matches|exist|exists|files?|results?|occurrences?)\b|\b(could not|couldn't|cannot|can't|did not|didn't) find\b|\bthere (are|is) no\b|\bnot\b[^.\n]{0,20}\b(called|used|referenced|present|found|defined|imported|mentioned)\b|\bnever (called|used|referenced)\b|\bno (usages?|uses|callers?|references?|occurrences?|matches|results?|calls?)\b`)

// searchTools are the tools whose clean result counts as a real search over
// the workspace: they are recursive and gitignore-aware by design (L1).
var searchTools = map[string]bool{"list_files": true, "grep": true}

// evidenceGap returns why an answer that claims "nothing found" is not
// backed by a real search (L8), or "" when it is fine. A search counts when
// a list_files or grep call ran without error over the workspace (no path
// argument, ".", or a path the task itself names).
func evidenceGap(answer, prompt string, calls []callRecord) string {
	if !nothingFoundRE.MatchString(answer) {
		return ""
	}
	for _, c := range calls {
		if !searchTools[c.Tool] || c.IsError {
			continue
		}
		var a struct {
			Path string `json:"path"`
			Dir  string `json:"dir"`
		}
		_ = json.Unmarshal([]byte(c.Args), &a)
		scope := strings.Trim(strings.TrimPrefix(a.Path+a.Dir, "./"), "/")
		if scope == "" || scope == "." || strings.Contains(prompt, scope) {
			return ""
		}
	}
	return "Your answer says nothing was found, but no search over the workspace backs it: " +
		"shell commands like find or ls are not a search of the workspace. " +
		"Run list_files (recursive, respects .gitignore) or grep over the workspace, then answer from its result."
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

func parseVerdict(text string) verdict {
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

// ShellCheck runs Command with sh -c in Dir, in its own process group that
// is killed on cancel or timeout.
type ShellCheck struct {
	Dir     string
	Command string
	Timeout time.Duration // 0 means 5 minutes
}

// Check runs the command; ok is false on a non-zero exit, output holds
// stdout and stderr. err is for failing to run at all.
func (c ShellCheck) Check(ctx context.Context) (bool, string, error) {
	to := c.Timeout
	if to == 0 {
		to = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Command)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return false, out.String(), fmt.Errorf("check %q: %w", c.Command, ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return false, fmt.Sprintf("$ %s\nexit %d\n%s", c.Command, ee.ExitCode(), tail(out.String(), 4000)), nil
	}
	if err != nil {
		return false, "", fmt.Errorf("check %q: %w", c.Command, err)
	}
	return true, out.String(), nil
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
