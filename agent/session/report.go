package session

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/tools"
)

// ReportDir is the folder, in the state folder, that holds task reports.
const ReportDir = "tasks"

// Report is the markdown report of a task: the agent's report (answer,
// figures, plan, tools, notes, diffs), the changed files that make tools
// run programs, then the commands it ran with their exit codes and what
// their network reached, and when it started and ended.
func Report(res *agent.Result, started time.Time) string {
	var b strings.Builder
	b.WriteString(res.Report())
	b.WriteString(programFilesSection(res))
	if len(res.Commands) > 0 {
		b.WriteString("\n## Commands run\n\n| command | folder | result | time |\n|---|---|---|---|\n")
		for _, c := range res.Commands {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", render.Cell(c.Command), render.Cell(orDot(c.Cwd)), commandStatus(c), c.Duration.Round(time.Millisecond))
		}
	}
	b.WriteString(networkSection(res.Commands))
	fmt.Fprintf(&b, "\n## Timing\n\nstarted %s, ended %s (%s)\n",
		started.Format(time.RFC3339), started.Add(res.Duration).Format(time.RFC3339), res.Duration.Round(time.Millisecond))
	return b.String()
}

// networkSection lists what each command reached and what was refused
// through the allowlist proxy, or is "" when no command used it.
func networkSection(cmds []tools.CommandOutput) string {
	var b strings.Builder
	for _, c := range cmds {
		for _, l := range c.Network {
			if b.Len() == 0 {
				b.WriteString("\n## Network\n\n| command | what |\n|---|---|\n")
			}
			fmt.Fprintf(&b, "| `%s` | %s |\n", render.Cell(c.Command), render.Cell(strings.TrimPrefix(l, "network: ")))
		}
	}
	return b.String()
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

// commandStatus is "exit code 0", "killed by SIGTERM (cancelled)", ...
func commandStatus(c tools.CommandOutput) string {
	s := fmt.Sprintf("exit code %d", c.ExitCode)
	if c.Signal != "" {
		s = "killed by " + c.Signal
	}
	switch {
	case c.TimedOut:
		s += " (timeout)"
	case c.Cancelled:
		s += " (cancelled)"
	}
	return s
}

// Summary is one line about a task's end: what it did and what it cost.
// Every face shows this line; the whole answer is in the result.
func Summary(res *agent.Result) string {
	took := res.Duration.Round(100 * time.Millisecond)
	var what string
	switch res.Status {
	case agent.StateCompleted:
		if len(res.Files) > 0 {
			names := make([]string, 0, len(res.Files))
			for i, f := range res.Files {
				if i == 5 {
					names = append(names, fmt.Sprintf("and %d more", len(res.Files)-5))
					break
				}
				names = append(names, f.Path)
			}
			what = fmt.Sprintf("completed in %s: changed %s", took, strings.Join(names, ", "))
			if answer := FirstLine(res.Answer, 120); answer != "" {
				what += ": " + answer
			}
		} else if res.Kind == agent.KindPlan {
			// "plan ready in 1.4s (2 steps): add Farewell, ..." rather than
			// "completed in 1.4s: Plan: ...".
			what = fmt.Sprintf("plan ready in %s (%d step%s)", took, len(res.Plan.Items), plural(len(res.Plan.Items), "", "s"))
			if answer := strings.TrimSpace(strings.TrimPrefix(FirstLine(res.Answer, 120), "Plan:")); answer != "" {
				what += ": " + answer
			}
		} else if res.Kind == agent.KindEdit {
			what = fmt.Sprintf("completed in %s, no file changed: %s", took, FirstLine(res.Answer, 120))
		} else {
			what = fmt.Sprintf("completed in %s: %s", took, FirstLine(res.Answer, 120))
		}
	case agent.StateCancelled:
		what = fmt.Sprintf("cancelled after %s", took)
		if len(res.Files) > 0 {
			what += fmt.Sprintf(" (%d file(s) changed before)", len(res.Files))
		}
	default:
		what = fmt.Sprintf("failed (%s) after %s", res.StopReason, took)
		if res.Error != "" {
			// Whole (up to 600 characters): the model service's own words
			// ("does not exist or you do not have access") and the fix.
			what += ": " + FirstLine(res.Error, 600)
		}
	}
	what += programFilesNote(res)
	// Cutting the answer may open what it had closed (a code span around
	// an address): the line is made inert again.
	return render.Inert(fmt.Sprintf("%s [%d model calls, %d tokens]", what, res.ModelCalls, res.Usage.InputTokens+res.Usage.OutputTokens))
}

// FirstLine is the first non-empty line of s without markdown marks, cut
// to n runes.
func FirstLine(s string, n int) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#>*- "))
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > n {
			r := []rune(line)
			return string(r[:n-1]) + "…"
		}
		return line
	}
	return "(no answer)"
}
