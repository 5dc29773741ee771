package acp

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentls/agentls/agent/session"
)

// undo answers /undo: it reverts the files the session's last task
// changed and names them; when that task changed nothing, nothing is
// reverted, and the reply says so (an earlier task's edits are not undone
// behind the user's back).
func (a *Agent) undo(ctx context.Context, s *acpSession) string {
	s.mu.Lock()
	last, prompt := s.lastTask, s.lastPrompt
	s.mu.Unlock()
	if last == "" {
		return "Nothing to undo: no task has run in this session yet."
	}
	res, err := s.host.Result(ctx, last)
	if err != nil {
		return "Undo failed: " + err.Error()
	}
	what := "`" + res.TaskID + "`"
	if p := session.FirstLine(prompt, 80); p != "" {
		what = fmt.Sprintf("%q", p)
	}
	if len(res.ChangedFiles) == 0 {
		return fmt.Sprintf("Nothing to undo: the last task (%s) changed no file.", what)
	}
	ws, err := s.host.Workspace(ctx)
	if err != nil {
		return "Undo failed: " + err.Error()
	}
	rep, err := s.host.Undo(withClientReads(ctx, s.id, true), last, newTurnPort(a, s).Editor(ws))
	if err != nil {
		return "Undo failed: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Undid the last task (%s): ", what)
	if len(rep.Reverted) == 0 {
		b.WriteString("no file needed reverting")
	} else {
		names := make([]string, len(rep.Reverted))
		for i, f := range rep.Reverted {
			names[i] = "`" + f.Path + "`"
		}
		fmt.Fprintf(&b, "%d file(s) reverted: %s", len(rep.Reverted), strings.Join(names, ", "))
	}
	if len(rep.Unchanged) > 0 {
		fmt.Fprintf(&b, "; %d already as before", len(rep.Unchanged))
	}
	if len(rep.NotReverted) > 0 {
		names := make([]string, len(rep.NotReverted))
		for i, f := range rep.NotReverted {
			names[i] = "`" + f.Path + "`"
		}
		fmt.Fprintf(&b, "; not reverted (changed since, overlapping the task's edits): %s", strings.Join(names, ", "))
	}
	b.WriteString(".")
	return b.String()
}
