package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStateDirIsGitIgnored: .agentls/ holds local state (reports, logs,
// the session database), so it carries a .gitignore of its own and never
// shows up as untracked; a .gitignore the user wrote there is kept.
func TestStateDirIsGitIgnored(t *testing.T) {
	root := t.TempDir()
	w := newWS(t, Options{Roots: []string{root}})
	dir := w.StateDir()
	if dir != filepath.Join(root, StateDirName) {
		t.Fatalf("StateDir() = %q; want %q", dir, filepath.Join(root, StateDirName))
	}
	got, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		t.Fatalf("read .agentls/.gitignore: %v", err)
	}
	if !containsLine(string(got), "*") {
		t.Errorf(".agentls/.gitignore = %q; want a line \"*\"", got)
	}

	mine := "tasks/\n"
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StateDir()
	if got, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(got) != mine {
		t.Errorf("after a second StateDir(), .gitignore = %q; want the user's %q kept", got, mine)
	}
}

func containsLine(s, line string) bool {
	return slices.Contains(strings.Split(s, "\n"), line)
}
