package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one run of the suite, as written by --out and read by
// --compare.
type Report struct {
	Version  string       `json:"version,omitempty"`
	Model    string       `json:"model"`
	BaseURL  string       `json:"baseURL"` // without user information or query
	Scripted bool         `json:"scripted"`
	Started  time.Time    `json:"started"`
	Summary  Summary      `json:"summary"`
	Tasks    []TaskResult `json:"tasks"`
}

// TaskResult is how one task went.
type TaskResult struct {
	Name    string `json:"name"`
	What    string `json:"what,omitempty"`
	Kind    string `json:"kind"`
	Fixture string `json:"fixture"`
	Solved  bool   `json:"solved"`
	// Failures say which parts of the check failed; empty when solved.
	Failures   []string `json:"failures,omitempty"`
	Status     string   `json:"status,omitempty"`
	StopReason string   `json:"stopReason,omitempty"`
	ModelCalls int      `json:"modelCalls"`
	MinCalls   int      `json:"minCalls"`
	// Tokens as the model service reported them; CachedTokens are input
	// tokens served from its prompt cache.
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	CachedTokens int `json:"cachedTokens"`
	// Cost in US dollars with the prices setting; nil when the model has
	// no price.
	Cost   *float64 `json:"cost,omitempty"`
	Wall   Seconds  `json:"wallSeconds"`
	Answer string   `json:"answer,omitempty"` // the first 600 bytes
	// Notes are the messages the loop gave the model (nudges, cut
	// answers, refused calls), the first 300 bytes of each.
	Notes []string `json:"notes,omitempty"`
}

// Summary adds up the tasks of a report.
type Summary struct {
	Tasks        int `json:"tasks"`
	Solved       int `json:"solved"`
	AtMinCalls   int `json:"atMinCalls"` // solved with no more calls than the task's minimum
	ModelCalls   int `json:"modelCalls"`
	MinCalls     int `json:"minCalls"`
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	CachedTokens int `json:"cachedTokens"`
	// CachedShare is CachedTokens / InputTokens.
	CachedShare float64 `json:"cachedShare"`
	// Cost is the sum over tasks; nil when no task's cost is known,
	// CostPartial when some are missing.
	Cost        *float64 `json:"cost,omitempty"`
	CostPartial bool     `json:"costPartial,omitempty"`
	// Wall is the run's elapsed time; TaskWall the sum of the tasks'.
	Wall     Seconds `json:"wallSeconds"`
	TaskWall Seconds `json:"taskWallSeconds"`
}

// Seconds is a duration in seconds, kept to the millisecond.
type Seconds float64

// MarshalJSON writes the seconds rounded to milliseconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return json.Marshal(math.Round(float64(s)*1000) / 1000)
}

func summarize(tasks []TaskResult, wall time.Duration) Summary {
	s := Summary{Tasks: len(tasks), Wall: Seconds(wall.Seconds())}
	var cost float64
	known := 0
	for _, t := range tasks {
		if t.Solved {
			s.Solved++
			if t.ModelCalls <= t.MinCalls {
				s.AtMinCalls++
			}
		}
		s.ModelCalls += t.ModelCalls
		s.MinCalls += t.MinCalls
		s.InputTokens += t.InputTokens
		s.OutputTokens += t.OutputTokens
		s.CachedTokens += t.CachedTokens
		s.TaskWall += t.Wall
		if t.Cost != nil {
			cost += *t.Cost
			known++
		}
	}
	if s.InputTokens > 0 {
		s.CachedShare = float64(s.CachedTokens) / float64(s.InputTokens)
	}
	if known > 0 {
		s.Cost = &cost
		s.CostPartial = known < len(tasks)
	}
	return s
}

// WriteJSON writes r to path, indented.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Tasks) == 0 {
		return nil, fmt.Errorf("%s: %w", path, errNoTasks)
	}
	return &r, nil
}

// WriteTable writes a table of the tasks and the summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "task\twhat\tkind\tsolved\tcalls\tmin\tin\tout\tcached\tcost\twall\tfailed check\n")
	for _, t := range r.Tasks {
		why := ""
		if len(t.Failures) > 0 {
			why = clip(t.Failures[0], 100)
			if len(t.Failures) > 1 {
				why += fmt.Sprintf(" (+%d)", len(t.Failures)-1)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%.1fs\t%s\n", t.Name, t.What, t.Kind, yesNo(t.Solved),
			t.ModelCalls, t.MinCalls, t.InputTokens, t.OutputTokens, share(t.CachedTokens, t.InputTokens), money(t.Cost), float64(t.Wall), why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := r.Summary
	cost := money(s.Cost)
	if s.CostPartial {
		cost += " (some tasks without a price)"
	}
	_, err := fmt.Fprintf(w, "\nmodel %s: solved %d/%d (%d at their minimum calls), %d model calls (minimum %d), tokens in %d out %d, cached prefix %s, cost %s, wall %.1fs (tasks %.1fs)\n",
		r.Model, s.Solved, s.Tasks, s.AtMinCalls, s.ModelCalls, s.MinCalls, s.InputTokens, s.OutputTokens,
		share(s.CachedTokens, s.InputTokens), cost, float64(s.Wall), float64(s.TaskWall))
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func share(part, whole int) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

func money(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *c)
}

// Compare writes, for each task of either report, how it changed from old
// to new, then the totals.
func Compare(w io.Writer, old, new *Report) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "task\tsolved\tcalls\tin\tout\tcached\tcost\twall\n")
	byName := map[string]TaskResult{}
	for _, t := range old.Tasks {
		byName[t.Name] = t
	}
	seen := map[string]bool{}
	for _, n := range new.Tasks {
		seen[n.Name] = true
		o, ok := byName[n.Name]
		if !ok {
			fmt.Fprintf(tw, "%s\tnew: %s\t%d\t%d\t%d\t%s\t%s\t%.1fs\n", n.Name, yesNo(n.Solved), n.ModelCalls, n.InputTokens, n.OutputTokens,
				share(n.CachedTokens, n.InputTokens), money(n.Cost), float64(n.Wall))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s -> %s\t%s\t%s\n", n.Name, solvedChange(o.Solved, n.Solved),
			intChange(o.ModelCalls, n.ModelCalls), intChange(o.InputTokens, n.InputTokens), intChange(o.OutputTokens, n.OutputTokens),
			share(o.CachedTokens, o.InputTokens), share(n.CachedTokens, n.InputTokens), costChange(o.Cost, n.Cost), wallChange(o.Wall, n.Wall))
	}
	for _, o := range old.Tasks {
		if !seen[o.Name] {
			fmt.Fprintf(tw, "%s\tgone (was %s)\t\t\t\t\t\t\n", o.Name, yesNo(o.Solved))
		}
	}
	os, ns := old.Summary, new.Summary
	fmt.Fprintf(tw, "total\t%d -> %d (%+d)\t%s\t%s\t%s\t%s -> %s\t%s\t%s\n", os.Solved, ns.Solved, ns.Solved-os.Solved,
		intChange(os.ModelCalls, ns.ModelCalls), intChange(os.InputTokens, ns.InputTokens), intChange(os.OutputTokens, ns.OutputTokens),
		share(os.CachedTokens, os.InputTokens), share(ns.CachedTokens, ns.InputTokens), costChange(os.Cost, ns.Cost), wallChange(os.Wall, ns.Wall))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nold: %s (%s), %s\nnew: %s (%s), %s\n", old.Model, old.BaseURL, old.Started.Format(time.RFC3339),
		new.Model, new.BaseURL, new.Started.Format(time.RFC3339))
	return err
}

func solvedChange(o, n bool) string {
	switch {
	case o == n:
		return yesNo(n)
	case n:
		return "NO -> yes (fixed)"
	default:
		return "yes -> NO (broken)"
	}
}

func intChange(o, n int) string {
	if o == n {
		return fmt.Sprint(n)
	}
	pct := ""
	if o != 0 {
		pct = fmt.Sprintf(", %+.0f%%", 100*float64(n-o)/float64(o))
	}
	return fmt.Sprintf("%d -> %d (%+d%s)", o, n, n-o, pct)
}

func costChange(o, n *float64) string {
	if o == nil || n == nil {
		return money(o) + " -> " + money(n)
	}
	return fmt.Sprintf("%s -> %s (%+.4f)", money(o), money(n), *n-*o)
}

func wallChange(o, n Seconds) string {
	return fmt.Sprintf("%.1fs -> %.1fs (%+.1fs)", float64(o), float64(n), float64(n-o))
}

// Solved reports whether every task of r was solved.
func (r *Report) Solved() bool { return r.Summary.Solved == r.Summary.Tasks }

// Names lists the tasks of r.
func (r *Report) Names() string {
	names := make([]string, len(r.Tasks))
	for i, t := range r.Tasks {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}
