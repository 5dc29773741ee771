package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/workspace"
)

// Files reads workspace files as the tools see them (an open buffer first,
// then the disk); *workspace.Workspace satisfies it. Resume uses it to see
// what changed while a task was interrupted (journal.Files).
type Files interface {
	FileReader
	Resolve(input string) (workspace.Path, error)
}

// Resume continues a task that was interrupted (its process crashed or was
// killed) from the session store, under its own ID: its stored history is
// repaired (a tool call whose result was never written gets one
// synthetic error result, written to the store), its plan, edits and totals
// are restored, and the model is told, in one injected message followed by
// a model turn, that the task was interrupted and which files changed
// outside the task since its last step. Messages continue the stored Seq
// numbering, so nothing is duplicated. A task that ended, or that runs in
// this runner, is refused.
func (r *Runner) Resume(ctx context.Context, taskID string, sink Sink) (*Task, error) {
	if r.cfg.Store == nil {
		return nil, fmt.Errorf("resume %s: %w", taskID, journal.ErrNoStore)
	}
	if t := r.Task(taskID); t != nil && !t.State().Terminal() {
		return nil, fmt.Errorf("resume %s: the task is running", taskID)
	}
	rec, err := r.cfg.Store.LoadTask(ctx, taskID)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", taskID, err)
	}
	if store.Terminal(rec.State) {
		return nil, fmt.Errorf("resume %s: the task has ended (%s); start a follow-up instead", taskID, rec.State)
	}
	spec := TaskSpec{Kind: Kind(rec.Kind), Prompt: rec.Prompt, FollowUp: rec.FollowUpOf}
	switch spec.Kind {
	case KindAsk, KindEdit, KindPlan:
	default:
		return nil, fmt.Errorf("resume %s: unknown kind %q", taskID, rec.Kind)
	}
	if len(rec.EditorContext) > 0 {
		if err := json.Unmarshal(rec.EditorContext, &spec.Context); err != nil {
			return nil, fmt.Errorf("resume %s: editor context: %w", taskID, err)
		}
	}
	var prev *Result
	if len(rec.Messages) == 0 && spec.FollowUp != "" {
		// Interrupted before its first message was stored: it starts over,
		// and a follow-up needs the task it follows.
		if prev, _, err = r.previous(ctx, spec.FollowUp); err != nil {
			return nil, fmt.Errorf("resume %s: %w", taskID, err)
		}
	}
	plan, err := journal.StoredPlan(rec)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", taskID, err)
	}
	t, tctx, cancel := r.newTask(ctx, taskID, rec.SessionID, spec, sink)
	if !r.cfg.Registry.add(t) {
		cancel(nil)
		return nil, fmt.Errorf("resume %s: the task is running", taskID)
	}
	r.launch(tctx, cancel, &run{r: r, t: t, cfg: r.cfg, resume: rec, resumePlan: plan, prev: prev})
	return t, nil
}

// maxOutsideDiff bounds the diff of one file shown to a resumed task.
const maxOutsideDiff = 4000

// restore rebuilds the run from the stored task and returns the state the
// task continues in.
func (x *run) restore(ctx context.Context) State {
	rec := x.resume
	x.seq = rec.NextSeq
	var msgs []llm.Message
	for _, m := range rec.Messages {
		if m.Excluded {
			continue
		}
		mm := journal.HistoryMessage(m)
		mm.Reasoning = ""
		msgs = append(msgs, mm)
		x.hseq = append(x.hseq, m.Seq)
	}
	x.t.mu.Lock()
	x.t.history = msgs
	if x.resumePlan != nil {
		x.t.plan = copyPlan(*x.resumePlan)
	}
	x.t.mu.Unlock()
	x.planUpdates = rec.PlanSeq

	// The tool call that ran when the process died has no result.
	repaired, added, dropped := RepairHistory(msgs)
	if added+dropped > 0 {
		x.notes = append(x.notes, fmt.Sprintf("history repaired: %d synthetic result(s) added, %d orphan(s) dropped", added, dropped))
		x.replaceHistory(repaired, excludedRepaired)
	}

	// Totals so far, so budgets and the result count the whole task.
	x.turns = rec.LLMCalls
	x.usage = llm.Usage(rec.Usage)
	x.modelTime = rec.ModelTime
	x.toolTime = rec.ToolTime
	for _, c := range rec.ToolCalls {
		st := x.stats[c.Name]
		st.Calls++
		st.Duration += c.Duration
		if c.IsError {
			st.Errors++
		}
		x.stats[c.Name] = st
		x.calls = append(x.calls, callRecord{Tool: c.Name, Args: string(c.Args), IsError: c.IsError, Evidence: tail(c.Summary, 800)})
		if x.callIDs == nil {
			x.callIDs = map[string]int{}
		}
		base, _, _ := strings.Cut(c.CallID, "#")
		x.callIDs[base]++ // a call of the resumed run with this ID is a new row
	}

	// The task's edits, and what changed outside it since its last step.
	var outside []string
	for _, fc := range store.FileChanges(rec.Edits) {
		x.t.changes.record(fc.Path, fc.Before, fc.After)
		cur, exists, err := journal.ReadText(ctx, x.cfg.Files, x.cfg.Root, fc.Path)
		switch {
		case err != nil:
			outside = append(outside, fmt.Sprintf("- %s: could not be read (%v); read it again before you change it", fc.Path, err))
		case !exists && !fc.Deleted:
			outside = append(outside, fmt.Sprintf("- %s: deleted since the task's last step", fc.Path))
		case exists && fc.Deleted:
			outside = append(outside, fmt.Sprintf("- %s: created again since the task deleted it", fc.Path))
		case exists && cur != fc.After:
			d := udiff.Unified("a/"+fc.Path, "b/"+fc.Path, fc.After, cur)
			outside = append(outside, fmt.Sprintf("- %s: changed since the task's last step:\n```diff\n%s```", fc.Path, clip(d, maxOutsideDiff)))
		}
	}
	var b strings.Builder
	b.WriteString("This task was interrupted (agentls stopped before it finished) and has now been resumed.")
	if added > 0 {
		b.WriteString(" The tool call that was running did not complete: check its effect before you repeat it.")
	}
	if len(outside) > 0 {
		b.WriteString("\nFiles this task changed were changed outside the task since its last step; read them again before you change them:\n")
		b.WriteString(strings.Join(outside, "\n"))
	} else if len(rec.Edits) > 0 {
		b.WriteString("\nThe files this task changed are as it left them.")
	}
	b.WriteString("\nContinue the task.")
	x.inject(b.String())
	x.flush(ctx)

	if x.t.spec.Kind == KindEdit && (rec.State == string(StatePlanning) || rec.State == string(StateQueued)) {
		return StatePlanning
	}
	return StateExecuting
}

// Interrupted lists the stored tasks an earlier process left in a live state
// (it crashed or was killed), oldest first: the tasks to offer for Resume.
// Tasks running in this runner are not listed.
func (r *Runner) Interrupted(ctx context.Context) ([]store.Task, error) {
	if r.cfg.Store == nil {
		return nil, nil
	}
	all, err := r.cfg.Store.Interrupted(ctx)
	if err != nil {
		return nil, fmt.Errorf("interrupted tasks: %w", err)
	}
	out := all[:0]
	for _, t := range all {
		if mine := r.Task(t.ID); mine != nil {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
