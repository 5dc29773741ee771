package extensions_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/extensions"
	"github.com/agentls/agentls/agent/redact"
)

func writeFile(t *testing.T, root, name, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExpandRunsACustomCommand: "/name args" that names a prompt file of
// the workspace becomes its prompt with the arguments placed, in the
// file's mode unless the caller chose one; a prompt file that links to a
// secret file is withheld, never sent; anything else is left as it is.
func TestExpandRunsACustomCommand(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user prompt files
	root := t.TempDir()
	writeFile(t, root, ".claude/commands/fix.md", "---\nmode: edit\n---\nFix the bug in $ARGUMENTS.\n")
	writeFile(t, root, ".env", "DB_PASSWORD=hunter2\n")
	if err := os.Symlink("../../.env", filepath.Join(root, ".claude", "commands", "setup.md")); err != nil {
		t.Fatal(err)
	}
	p := extensions.NewPrompts(nil)
	roots := []string{root}
	var names []string
	for _, c := range p.Read(roots) {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "fix setup" {
		t.Fatalf("Read = %q; want fix and setup", names)
	}
	r := redact.New()
	for _, tc := range []struct {
		name     string
		spec     agent.TaskSpec
		want     string
		wantKind agent.Kind
	}{
		{"command", agent.TaskSpec{Prompt: "/fix parser.go"}, "Fix the bug in parser.go.", agent.KindEdit},
		{"caller's mode", agent.TaskSpec{Prompt: "/fix parser.go", Kind: agent.KindPlan}, "Fix the bug in parser.go.", agent.KindPlan},
		{"no such command", agent.TaskSpec{Prompt: "/nothing here"}, "/nothing here", ""},
		{"resumed", agent.TaskSpec{Prompt: "/fix parser.go", ResumeID: "t1"}, "/fix parser.go", ""},
		{"secret link", agent.TaskSpec{Prompt: "/setup"}, "[withheld: ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Expand(tc.spec, roots, r)
			if !strings.HasPrefix(strings.TrimSpace(got.Prompt), tc.want) || got.Kind != tc.wantKind || strings.Contains(got.Prompt, "hunter2") {
				t.Errorf("Expand(%q) = %q in mode %q; want %q... in mode %q", tc.spec.Prompt, got.Prompt, got.Kind, tc.want, tc.wantKind)
			}
		})
	}
}
