package agent

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

func TestTouchedFolders(t *testing.T) {
	for _, tc := range []struct {
		name string
		args string
		res  tools.Result
		want []string
	}{
		{"read", `{"path":"pkg/cart/cart.go"}`, tools.Result{}, []string{"pkg/cart/cart.go"}},
		{"absolute inside", `{"path":"/ws/pkg/a.go"}`, tools.Result{}, []string{"pkg/a.go"}},
		{"outside", `{"path":"/etc/passwd"}`, tools.Result{}, nil},
		{"up", `{"path":"../x/AGENTS.md"}`, tools.Result{}, nil},
		{"root", `{"path":"."}`, tools.Result{}, nil},
		{"changed", `{}`, tools.Result{Changed: []string{"a/b.go"}}, []string{"a/b.go"}},
		{"grep matches", `{"pattern":"x"}`, tools.Result{Data: &tools.GrepOutput{Files: []string{"c/d.go"}}}, []string{"c/d.go"}},
		{"bad json", `{`, tools.Result{}, nil},
	} {
		got := touched("/ws", llm.ToolCall{Name: "t", Arguments: tc.args}, tc.res)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: touched = %q; want %q", tc.name, got, tc.want)
		}
	}
	if got, want := folders("a/b/c.go"), []string{"a", "a/b", "a/b/c.go"}; !slices.Equal(got, want) {
		t.Errorf("folders = %q; want %q", got, want)
	}
	for dir, want := range map[string]bool{".git": true, "a/.git/hooks": true, ".agentls/tasks": true, ".github": false, "pkg": false} {
		if stateFolder(dir) != want {
			t.Errorf("stateFolder(%q) = %v; want %v", dir, !want, want)
		}
	}
}

// The report lists a folder's instruction file with the call it came after.
func TestReportListsNestedInstructions(t *testing.T) {
	r := &Result{TaskID: "t1", Kind: KindAsk, Prompt: "p", Status: StateCompleted, Instructions: []InstructionFile{
		{Path: "AGENTS.md", Bytes: 10},
		{Path: "pkg/cart/AGENTS.md", Bytes: 20, After: "read_file pkg/cart/cart.go"},
	}}
	want := "instructions used: AGENTS.md, pkg/cart/AGENTS.md (after read_file pkg/cart/cart.go)\n"
	if got := r.Report(); !strings.Contains(got, want) {
		t.Errorf("Report() lacks %q:\n%s", want, got)
	}
}
