package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
)

// checkBaseline runs the check command once before the task's first edit,
// so that a check failing after the task is judged against how it failed
// before: only failures that are new are the task's. A check that was
// failing before and fails the same way after is reported as such, not
// blamed on the task.
type checkBaseline struct {
	next agent.Checker

	once     sync.Once
	mu       sync.Mutex // guards the fields below
	ran      bool       // the baseline ran
	beforeOK bool
	before   string // its output
	afterOK  *bool  // the last check of the task
	excused  bool   // the last check failed only as it did before the task
}

// capture runs the check once, before the first edit.
func (c *checkBaseline) capture(ctx context.Context) {
	c.once.Do(func() {
		ok, out, err := c.next.Check(ctx)
		if err != nil {
			return
		}
		c.mu.Lock()
		c.ran, c.beforeOK, c.before = true, ok, out
		c.mu.Unlock()
	})
}

// Check implements agent.Checker: the check, judged against the baseline.
func (c *checkBaseline) Check(ctx context.Context) (bool, string, error) {
	ok, out, err := c.next.Check(ctx)
	if err != nil {
		return ok, out, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.afterOK, c.excused = &ok, false
	if ok || !c.ran || c.beforeOK {
		return ok, out, nil
	}
	added := newLines(out, c.before)
	if len(added) == 0 {
		// Failing exactly as before the task: not the task's doing.
		c.excused = true
		return true, "", nil
	}
	return false, "The check command was already failing before this task; these failures are new since then:\n" + strings.Join(added, "\n"), nil
}

// newLines are the lines of after that before does not have, ignoring
// timing figures that change from run to run.
func newLines(after, before string) []string {
	seen := map[string]int{}
	for _, l := range strings.Split(before, "\n") {
		seen[normalizeCheckLine(l)]++
	}
	var out []string
	for _, l := range strings.Split(after, "\n") {
		k := normalizeCheckLine(l)
		if k == "" {
			continue
		}
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		out = append(out, l)
	}
	return out
}

// normalizeCheckLine drops what differs between two runs of the same
// failure: durations like "(0.12s)" or "0.004s" and surrounding space.
func normalizeCheckLine(l string) string {
	l = strings.TrimSpace(l)
	fields := strings.Fields(l)
	for i, f := range fields {
		t := strings.Trim(f, "()")
		if strings.HasSuffix(t, "s") && strings.Trim(strings.TrimSuffix(t, "s"), "0123456789.") == "" && len(t) > 1 {
			fields[i] = "<time>"
		}
	}
	return strings.Join(fields, " ")
}

// section is the report's account of the check against its baseline.
func (c *checkBaseline) section() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ran {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Check command\n\n")
	before := "passed"
	if !c.beforeOK {
		before = "failed"
	}
	fmt.Fprintf(&b, "Before the task's first edit it %s.", before)
	switch {
	case c.afterOK == nil:
		b.WriteString(" It did not run after the task.\n")
	case c.excused:
		b.WriteString(" After the task it failed the same way: a failure that was there before the task, not one it caused.\n")
	case *c.afterOK:
		b.WriteString(" After the task it passed.\n")
	default:
		b.WriteString(" After the task it failed with failures that are new.\n")
	}
	return b.String()
}

// baselineTool is an edit tool that runs the check's baseline before the
// task's first edit.
type baselineTool struct {
	tools.Tool
	check *checkBaseline
}

func (t baselineTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	t.check.capture(ctx)
	return t.Tool.Run(ctx, args)
}
