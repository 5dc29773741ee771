package session

import (
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent"
)

func TestRunsPrograms(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".gitattributes", true},
		{"sub/.gitattributes", true},
		{".gitmodules", true},
		{".git/config", true},
		{".vscode/settings.json", true},
		{".vscode/tasks.json", true},
		{"app/.vscode/settings.json", true},
		{".dir-locals.el", true},
		{".nvim.lua", true},
		{".exrc", true},
		{".envrc", true},
		{".pre-commit-config.yaml", true},
		{".husky/pre-commit", true},
		{".mcp.json", true},
		{".agentls/settings.json", true},
		{"proj.code-workspace", true},
		{".cargo/config.toml", true},
		{".github/workflows/ci.yml", true},
		{".gitlab-ci.yml", true},
		{".circleci/config.yml", true},
		{".github/CODEOWNERS", false},
		{".editorconfig", false}, // indentation and line endings only
		{".gitignore", false},
		{"settings.json", false},
		{"vscode/settings.json", false},
		{"src/main.go", false},
		{"docs/git.md", false},
	} {
		if _, got := runsPrograms(tc.path); got != tc.want {
			t.Errorf("runsPrograms(%q) = %v; want %v", tc.path, got, tc.want)
		}
	}
}

// TestReportWarnsAboutFilesThatRunPrograms: the report has a section and
// the summary a warning for such files, and neither for ordinary ones.
func TestReportWarnsAboutFilesThatRunPrograms(t *testing.T) {
	res := &agent.Result{TaskID: "t1", Kind: agent.KindEdit, Status: agent.StateCompleted, Answer: "done",
		Files: []agent.FileChange{{Path: "main.go", Diff: "x\n"}, {Path: ".gitattributes", Diff: "y\n"}, {Path: ".vscode/tasks.json"}}}
	rep := Report(res, time.Now())
	for _, want := range []string{"## Files that make tools run programs", "- .gitattributes: git runs the filters", "- .vscode/tasks.json: VS Code tasks"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	if strings.Contains(rep, "- main.go:") {
		t.Errorf("report lists main.go as running programs:\n%s", rep)
	}
	if sum := Summary(res); !strings.Contains(sum, "it changed files that make tools run programs: .gitattributes, .vscode/tasks.json [") {
		t.Errorf("Summary = %q; want the warning", sum)
	}
	res.Files = res.Files[:1]
	if rep, sum := Report(res, time.Now()), Summary(res); strings.Contains(rep, "run programs") || strings.Contains(sum, "run programs") {
		t.Errorf("a warning without such a file:\n%s\n%s", rep, sum)
	}
}
