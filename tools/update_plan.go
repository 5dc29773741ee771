package tools

import (
	"context"
	"fmt"
	"strings"
)

type planItemArgs struct {
	ID     string   `json:"id" desc:"short stable identifier, e.g. \"1\" or \"tests\""`
	Text   string   `json:"text" desc:"what the step does, for the user"`
	Status string   `json:"status" enum:"pending,in_progress,done,skipped" desc:"pending, in_progress, done or skipped"`
	Reason string   `json:"reason,omitempty" desc:"why a step was skipped (required with skipped), e.g. \"already satisfied, no change needed\""`
	Files  []string `json:"files,omitempty" desc:"workspace-relative files the step changes (in a plan task: would change)"`
}

type updatePlanArgs struct {
	Items []planItemArgs `json:"items" desc:"the whole checklist, replacing the previous one"`
}

func newUpdatePlan(r *Registry) Tool {
	return newTool("update_plan", 0, func(ctx context.Context, a *updatePlanArgs) (Result, error) {
		return updatePlan(a)
	})
}

var planStatuses = map[string]PlanStatus{
	"pending": PlanPending, "todo": PlanPending, "not_started": PlanPending,
	"in_progress": PlanInProgress, "in-progress": PlanInProgress, "active": PlanInProgress, "doing": PlanInProgress,
	"done": PlanDone, "completed": PlanDone, "complete": PlanDone,
	"skipped": PlanSkipped, "skip": PlanSkipped,
}

func updatePlan(a *updatePlanArgs) (Result, error) {
	plan := &Plan{}
	seen := map[string]bool{}
	inProgress := 0
	for i, it := range a.Items {
		id := strings.TrimSpace(it.ID)
		if id == "" {
			id = fmt.Sprint(i + 1)
		}
		if seen[id] {
			return errorf("items[%d]: id %q is used twice; give each item its own id", i, id), nil
		}
		seen[id] = true
		text := strings.TrimSpace(it.Text)
		if text == "" {
			return errorf("items[%d] (id %q): text is empty; say what the step does", i, id), nil
		}
		st, ok := planStatuses[strings.ToLower(strings.TrimSpace(it.Status))]
		if !ok {
			return errorf("items[%d] (id %q): status %q is not one of pending, in_progress, done, skipped", i, id, it.Status), nil
		}
		if st == PlanSkipped && strings.TrimSpace(it.Reason) == "" {
			return errorf("items[%d] (id %q): a skipped item needs a reason, e.g. \"already satisfied, no change needed\"", i, id), nil
		}
		if st == PlanInProgress {
			inProgress++
		}
		var files []string
		for _, f := range it.Files {
			if f = strings.TrimSpace(f); f != "" {
				files = append(files, f)
			}
		}
		plan.Items = append(plan.Items, PlanItem{ID: id, Text: text, Status: st, Reason: strings.TrimSpace(it.Reason), Files: files})
	}
	var b strings.Builder
	for _, it := range plan.Items {
		fmt.Fprintf(&b, "%s %s. %s", it.Status.Mark(), it.ID, it.Text)
		switch it.Status {
		case PlanInProgress:
			b.WriteString(" (in progress)")
		case PlanSkipped:
			fmt.Fprintf(&b, " (skipped: %s)", it.Reason)
		}
		b.WriteByte('\n')
	}
	open := plan.Open()
	if len(plan.Items) == 0 {
		b.WriteString("plan cleared (no items)")
	} else {
		fmt.Fprintf(&b, "plan updated: %d of %d %s open", open, len(plan.Items), plural(len(plan.Items), "item", "items"))
	}
	if inProgress > 1 {
		fmt.Fprintf(&b, "; note: %d items are in progress, keep one at a time", inProgress)
	}
	return Result{Text: b.String(), Data: plan}, nil
}

// presentUpdatePlan: shown as the plan it sets.
func presentUpdatePlan(*updatePlanArgs, *Result) Presentation {
	return Presentation{Title: "Update the plan", Activity: "updating the plan", Kind: KindThink, AsPlan: true}
}
