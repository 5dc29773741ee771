package agent

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentls/agentls/agent/journal"
)

// Lessons of failed tasks are stored and found by the journal
// (journal.Lessons, which the host gives the task in Config.Lessons); the
// loop says what a task is about and what it left.

// LessonAbout is what a task is about, for storing and finding lessons
// (journal.Lessons): its prompt and the file and symbol of its editor
// context.
func LessonAbout(spec TaskSpec) string {
	parts := []string{spec.Prompt}
	if spec.Context.File != "" {
		parts = append(parts, spec.Context.File)
	}
	if spec.Context.Symbol != "" {
		parts = append(parts, spec.Context.Symbol)
	}
	return strings.Join(parts, " ")
}

// lessonOf is the lesson a failed task leaves.
func (x *run) lessonOf(res *Result) *journal.Learned {
	var tags []string
	tags = append(tags, string(res.Kind), string(res.StopReason))
	var names []string
	for name := range res.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	tags = append(tags, names...)
	return &journal.Learned{About: LessonAbout(x.t.spec), Text: x.lesson(res), Tags: strings.Join(tags, " ")}
}

// workedOf is what a successful task did, in one line: its prompt, the
// tools it used, the files it changed and the first line of its answer.
func workedOf(res *Result) string {
	var used []string
	for name, st := range res.Tools {
		used = append(used, fmt.Sprintf("%s×%d", name, st.Calls))
	}
	sort.Strings(used)
	var b strings.Builder
	fmt.Fprintf(&b, "%q succeeded after %d model call(s)", clip(res.Prompt, 80), res.ModelCalls)
	if len(used) > 0 {
		fmt.Fprintf(&b, ", using %s", strings.Join(used, ", "))
	}
	if len(res.Files) > 0 {
		names := make([]string, 0, len(res.Files))
		for i, f := range res.Files {
			if i == 5 {
				names = append(names, fmt.Sprintf("and %d more", len(res.Files)-5))
				break
			}
			names = append(names, f.Path)
		}
		fmt.Fprintf(&b, ", changing %s", strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, "; its answer began: %s", clip(firstLine(res.Answer, 200), 160))
	return b.String()
}
