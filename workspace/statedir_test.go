package workspace

import (
	"context"
	"errors"
	"log/slog"
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

// TestStateDirThatIsOrHoldsALinkIsRefused: a repository that ships
// .agentls as a link, or a link at any name agentls writes there, gets its
// state folder refused (ErrStateRefused, nothing written through the link,
// said once in the log), and edits of the workspace still work, their
// temporary files beside their target.
func TestStateDirThatIsOrHoldsALinkIsRefused(t *testing.T) {
	names := append([]string{""}, StateNames...)
	for _, n := range names {
		t.Run(".agentls/"+n, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "victim")
			os.WriteFile(victim, []byte("before"), 0o644)
			target := victim
			if n == "" || !strings.Contains(n, ".") {
				target = outside
			}
			link := filepath.Join(root, StateDirName, n)
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			var logs strings.Builder
			w := newWS(t, Options{Roots: []string{root}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			for range 2 {
				if d, err := w.OpenState(); !errors.Is(err, ErrStateRefused) {
					if d != nil {
						d.Close()
					}
					t.Fatalf("OpenState: %v; want ErrStateRefused", err)
				}
			}
			if c := strings.Count(logs.String(), "state folder refused"); c != 1 {
				t.Errorf("the refusal is logged %d times; want once:\n%s", c, logs.String())
			}
			p, err := w.Resolve("main.go")
			if err != nil {
				t.Fatal(err)
			}
			if err := w.DiskEditor().Apply(context.Background(), "t", []FileEdit{{Path: p, Create: true, Edits: []TextEdit{{NewText: "package main\n"}}}}); err != nil {
				t.Fatalf("an edit with the state folder refused: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "main.go")); string(b) != "package main\n" {
				t.Errorf("main.go = %q", b)
			}
			if b, _ := os.ReadFile(victim); string(b) != "before" {
				t.Errorf("the link's target now holds %q", b)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("%d entries outside; want only the victim", len(ents))
			}
		})
	}
}
