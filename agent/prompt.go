package agent

import (
	"fmt"
	"strings"

	"github.com/agentls/agentls/agent/journal"
)

// systemPrompt is the first message of every request. It depends only on
// the workspace root and the task kind, so the request prefix (system
// prompt, tool definitions, earlier turns) stays byte-identical across the
// turns of a task and across tasks of a session. The loop appends
// the project instructions (instructions.go), read once at the task's
// start, so the prefix stays identical across the turns of a task.
func systemPrompt(root string, kind Kind) string {
	var b strings.Builder
	b.WriteString("You are agentls, a coding agent working inside the user's editor.\n")
	fmt.Fprintf(&b, "The workspace root is %s. Every path you give or read is relative to it.\n", root)
	b.WriteString(`
Rules:
- To find files use list_files: it is recursive and respects .gitignore. Do not use shell commands such as find or ls for discovery.
- To search file contents use grep. Read a file with read_file before you change it.
- Tool results are the truth. When a search finds nothing, say what you searched and where.
- When you have the answer, reply with it in markdown and call no tool. Keep it short; answer exactly what was asked.
`)
	if kind == KindEdit {
		b.WriteString(`- Keep a plan with update_plan (you may call it in the same response as your first tools). Mark items done as you finish them; an item that needs no change is closed as "skipped" with the reason "already satisfied".
- Change files with edit_file or write_file. Steps that depend on each other go in separate responses, in order.
- You are done when every plan item is done or skipped and the change is complete; then reply with a summary and no tool call.
`)
	} else if kind == KindPlan {
		b.WriteString(`- This is a plan task: explore with the read-only tools, then plan. Nothing is written and no command runs in this task; the user executes the plan afterwards.
- Make the plan with update_plan: one item per step, status pending, and for each item the files it would change.
- End with an answer that says what would change and why, file by file, and the commands you would run to check it; call no tool in that answer.
`)
	} else {
		b.WriteString("- This is a question: you may only read. Do not try to change files.\n")
	}
	return b.String()
}

// taskMessage is the user message that states the task. It carries the
// editor context, the previous task for a follow-up and the lessons
// of earlier failed tasks that are about the same thing.
func taskMessage(spec TaskSpec, prev *Result, lessons []journal.Lesson) string {
	var b strings.Builder
	if prev != nil {
		b.WriteString("This continues the previous task of this session.\n")
		fmt.Fprintf(&b, "Previous task: %s\n", prev.Prompt)
		fmt.Fprintf(&b, "Previous result (%s, %s):\n%s\n\n", prev.Status, prev.StopReason, strings.TrimSpace(prev.Answer))
	}
	if len(lessons) > 0 {
		b.WriteString("Lessons from earlier failed tasks on the same subject:\n")
		for _, l := range lessons {
			if l.Worked == "" {
				fmt.Fprintf(&b, "- %s\n", l.Text)
				continue
			}
			fmt.Fprintf(&b, "- Earlier a similar task failed: %s\n  Later a similar task succeeded: %s\n", l.Text, l.Worked)
		}
		b.WriteString("\n")
	}
	c := spec.Context
	if c.File != "" {
		fmt.Fprintf(&b, "Current file: %s", c.File)
		if c.StartLine > 0 {
			fmt.Fprintf(&b, " lines %d-%d", c.StartLine, max(c.EndLine, c.StartLine))
		}
		b.WriteString("\n")
	}
	if c.Symbol != "" {
		fmt.Fprintf(&b, "Symbol under the cursor: %s\n", c.Symbol)
	}
	if c.Selection != "" {
		fmt.Fprintf(&b, "Selected text:\n```\n%s\n```\n", c.Selection)
	}
	for _, d := range c.Diagnostics {
		fmt.Fprintf(&b, "Diagnostic line %d (%s): %s\n", d.Line, d.Severity, d.Message)
	}
	if b.Len() > 0 {
		b.WriteString("\nTask: ")
	}
	b.WriteString(spec.Prompt)
	return b.String()
}
