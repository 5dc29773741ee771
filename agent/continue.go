package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
)

// A task interrupted by a crash or a kill is read back by the journal
// (journal.Resume, called by the host) and continued here, from the
// history, plan, edits and totals it recorded.

// Continue runs again, under its own ID, the interrupted task r holds
// (journal.Resume read it back): its history is repaired (a tool call whose
// result was never written gets one synthetic error result, which is
// recorded), its plan, edits and totals are restored, and the model is
// told, in one injected message followed by a model turn, that the task
// was interrupted and which files changed outside the task since its last
// step. Messages continue the recorded Seq numbering, so nothing is
// duplicated. A task that runs in the registry is refused.
func Continue(ctx context.Context, cfg Config, r *journal.Resumed, sink Sink) (*Task, error) {
	cfg = cfg.withDefaults()
	t, err := resume(ctx, cfg, r, sink)
	if err != nil {
		cfg.Guard.done()
	}
	return t, err
}

func resume(ctx context.Context, cfg Config, r *journal.Resumed, sink Sink) (*Task, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("resume %s: no model", r.ID)
	}
	if t := cfg.Registry.Task(r.ID); t != nil && !t.State().Terminal() {
		return nil, fmt.Errorf("resume %s: the task is running", r.ID)
	}
	spec, err := ResumedSpec(r)
	if err != nil {
		return nil, err
	}
	var prev *Result
	if len(r.History) == 0 && spec.FollowUp != "" {
		// Interrupted before its first message was recorded: it starts
		// over, and a follow-up needs the task it follows.
		if prev, _, err = previous(cfg, spec.FollowUp); err != nil {
			return nil, fmt.Errorf("resume %s: %w", r.ID, err)
		}
	}
	t, tctx, cancel := newTask(ctx, cfg, r.ID, r.SessionID, spec, sink)
	if !cfg.Registry.add(t) {
		cancel(nil)
		return nil, fmt.Errorf("resume %s: the task is running", r.ID)
	}
	x := &run{t: t, cfg: cfg, resume: r, prev: prev}
	if len(r.History) == 0 {
		x.lessons = cfg.Lessons
	}
	launch(tctx, cancel, x)
	return t, nil
}

// ResumedSpec is the spec of the interrupted task r: its kind, prompt,
// editor context and the task it follows up. The host finds the lessons
// of a task that starts over (no history) by it.
func ResumedSpec(r *journal.Resumed) (TaskSpec, error) {
	spec := TaskSpec{Kind: Kind(r.Kind), Prompt: r.Prompt, FollowUp: r.FollowUp}
	switch spec.Kind {
	case KindAsk, KindEdit, KindPlan:
	default:
		return TaskSpec{}, fmt.Errorf("resume %s: unknown kind %q", r.ID, r.Kind)
	}
	if len(r.EditorContext) > 0 {
		if err := json.Unmarshal(r.EditorContext, &spec.Context); err != nil {
			return TaskSpec{}, fmt.Errorf("resume %s: editor context: %w", r.ID, err)
		}
	}
	return spec, nil
}

// maxOutsideDiff bounds the diff of one file shown to a resumed task.
const maxOutsideDiff = 4000

// restore rebuilds the run from the interrupted task's record and returns
// the state the task continues in.
func (x *run) restore(ctx context.Context) State {
	rec := x.resume
	x.seq = rec.NextSeq
	var msgs []llm.Message
	for _, m := range rec.History {
		msgs = append(msgs, m.Message)
		x.hseq = append(x.hseq, m.Seq)
	}
	x.t.mu.Lock()
	x.t.history = msgs
	if rec.Plan != nil {
		x.t.plan = copyPlan(*rec.Plan)
	}
	x.t.mu.Unlock()
	x.planUpdates = rec.PlanUpdates

	// The tool call that ran when the process died has no result.
	repaired, added, dropped := RepairHistory(msgs)
	if added+dropped > 0 {
		x.notes = append(x.notes, fmt.Sprintf("history repaired: %d synthetic result(s) added, %d orphan(s) dropped", added, dropped))
		x.replaceHistory(repaired, excludedRepaired)
	}

	// Totals so far, so budgets and the result count the whole task.
	x.turns = rec.ModelCalls
	x.usage = rec.Usage
	x.modelTime = rec.ModelTime
	x.toolTime = rec.ToolTime
	for _, c := range rec.ToolCalls {
		x.tally(c.Name, c.Duration, c.IsError)
		x.calls = append(x.calls, callRecord{Tool: c.Name, Args: string(c.Args), IsError: c.IsError, Evidence: tail(c.Summary, 800)})
		if x.callIDs == nil {
			x.callIDs = map[string]int{}
		}
		base, _, _ := strings.Cut(c.CallID, "#")
		x.callIDs[base]++ // a call of the resumed run with this ID is a new row
	}

	// The task's edits, and what changed outside it since its last step.
	for _, fc := range rec.Files {
		x.t.changes.record(fc.Path, fc.Before, fc.After)
	}
	var outside []string
	for _, o := range rec.Outside {
		switch {
		case o.Err != nil:
			outside = append(outside, fmt.Sprintf("- %s: could not be read (%v); read it again before you change it", o.Path, o.Err))
		case o.Deleted:
			outside = append(outside, fmt.Sprintf("- %s: deleted since the task's last step", o.Path))
		case o.Recreated:
			outside = append(outside, fmt.Sprintf("- %s: created again since the task deleted it", o.Path))
		default:
			outside = append(outside, fmt.Sprintf("- %s: changed since the task's last step:\n```diff\n%s```", o.Path, clip(o.Diff, maxOutsideDiff)))
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
	} else if len(rec.Files) > 0 {
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
