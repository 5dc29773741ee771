package agent

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentls/agentls/tools"
)

// Report renders the result as a markdown document for people: the answer,
// the figures, the plan, the tools and the diffs. The LSP layer shows
// it (agentls.showReport) and writes it to .agentls/tasks/ID.md.
func (r *Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Task %s (%s): %s\n\n", r.TaskID, r.Kind, oneLine(r.Prompt))
	fmt.Fprintf(&b, "**%s** (%s)", r.Status, r.StopReason)
	if r.Error != "" {
		fmt.Fprintf(&b, ": %s", r.Error)
	}
	b.WriteString("\n\n")
	if r.Answer != "" {
		b.WriteString(strings.TrimSpace(r.Answer) + "\n\n")
	}
	b.WriteString("| model calls | input tokens | output tokens | cached | time in model | time in tools | wall |\n|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %s | %s | %s |\n\n", r.ModelCalls, r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CachedTokens,
		r.ModelTime.Round(time.Millisecond), r.ToolTime.Round(time.Millisecond), r.Duration.Round(time.Millisecond))
	if len(r.Instructions) > 0 {
		names := make([]string, len(r.Instructions))
		for i, f := range r.Instructions {
			names[i] = f.Path
			if f.Cut {
				names[i] += " (cut)"
			}
			if f.After != "" {
				names[i] += " (after " + f.After + ")"
			}
		}
		fmt.Fprintf(&b, "instructions used: %s\n\n", strings.Join(names, ", "))
	}
	if len(r.Plan.Items) > 0 {
		fmt.Fprintf(&b, "## Plan (%d updates)\n\n", r.PlanUpdates)
		for _, it := range r.Plan.Items {
			fmt.Fprintf(&b, "- %s\n", strings.TrimRight(renderPlan(tools.Plan{Items: []tools.PlanItem{it}}), "\n"))
		}
		b.WriteString("\n")
	}
	if len(r.Tools) > 0 {
		b.WriteString("## Tools\n\n| tool | calls | errors | time |\n|---|---|---|---|\n")
		names := make([]string, 0, len(r.Tools))
		for n := range r.Tools {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			st := r.Tools[n]
			fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", n, st.Calls, st.Errors, st.Duration.Round(time.Millisecond))
		}
		b.WriteString("\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", firstLine(n, 300))
		}
		b.WriteString("\n")
	}
	if len(r.Files) > 0 {
		b.WriteString("## Files changed\n\n")
		for _, f := range r.Files {
			if f.Diff == "" {
				fmt.Fprintf(&b, "- %s (changed by a command)\n", f.Path)
				continue
			}
			// A fence longer than any run of backticks in the diff: a
			// changed markdown file cannot close it.
			fence := strings.Repeat("`", max(3, longestRun(f.Diff, '`')+1))
			fmt.Fprintf(&b, "%sdiff\n%s%s\n", fence, f.Diff, fence)
		}
	}
	return b.String()
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			n = 0
			continue
		}
		n++
		best = max(best, n)
	}
	return best
}
