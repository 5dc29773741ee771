package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// ReportDir is the folder, in the state folder, that holds task reports.
const ReportDir = "tasks"

// Report is the markdown report of a task: the agent's report (answer,
// figures, plan, tools, notes, diffs), then the commands it ran with their
// exit codes, and when it started and ended.
func Report(res *agent.Result, commands []tools.CommandOutput, started time.Time) string {
	var b strings.Builder
	b.WriteString(res.Report())
	if len(commands) > 0 {
		b.WriteString("\n## Commands run\n\n| command | folder | result | time |\n|---|---|---|---|\n")
		for _, c := range commands {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", mdCell(c.Command), mdCell(orDot(c.Cwd)), commandStatus(c), c.Duration.Round(time.Millisecond))
		}
	}
	fmt.Fprintf(&b, "\n## Timing\n\nstarted %s, ended %s (%s)\n",
		started.Format(time.RFC3339), started.Add(res.Duration).Format(time.RFC3339), res.Duration.Round(time.Millisecond))
	return b.String()
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
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

// writeReport writes the task's report to <stateDir>/tasks/ID.md and
// returns its path.
func writeReport(stateDir string, e *taskEntry, res *agent.Result, secrets ...string) (string, error) {
	if res == nil {
		return "", fmt.Errorf("task %s has no result", e.id)
	}
	e.mu.Lock()
	cmds := append([]tools.CommandOutput(nil), e.commands...)
	e.mu.Unlock()
	dir := filepath.Join(stateDir, ReportDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	path := filepath.Join(dir, res.TaskID+".md")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(llm.Redact(Report(res, cmds, e.started), secrets...)), 0o644); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return path, nil
}
