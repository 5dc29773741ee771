package tools

import "testing"

// TestPlanStatusMark: the one checklist notation every view of a plan uses
// (tool results, editor progress, reports, the terminal).
func TestPlanStatusMark(t *testing.T) {
	for s, want := range map[PlanStatus]string{
		PlanDone: "[x]", PlanSkipped: "[-]", PlanInProgress: "[>]", PlanPending: "[ ]", "bogus": "[ ]",
	} {
		if got := s.Mark(); got != want {
			t.Errorf("PlanStatus(%q).Mark() = %q; want %q", s, got, want)
		}
	}
}
