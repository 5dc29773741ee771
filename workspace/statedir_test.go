package workspace

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
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

// TestStateDirLetsGitSeeTheCustomCommandsOnly: git, asked by a real
// `git status`, lists the custom commands a team shares from
// .agentls/commands/ and none of the local state; a workspace whose
// .gitignore is the first form (which hid the commands too) gets the new
// one.
func TestStateDirLetsGitSeeTheCustomCommandsOnly(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed to check what it lists: %v", err)
	}
	for _, tc := range []struct {
		name string
		old  string // .gitignore before the workspace opens; "" for none
	}{
		{"new state folder", ""},
		{"first form of the ignore file", stateIgnoreV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{
				StateDirName + "/commands/review.md":     "Review $ARGUMENTS\n",
				StateDirName + "/commands/go/vet.md":     "Vet\n",
				StateDirName + "/tasks/t1.md":            "report\n",
				StateDirName + "/agentls.db":             "db",
				StateDirName + "/recordings/t1.jsonl":    "{}\n",
				StateDirName + "/commands-not-shared.md": "x\n",
			}
			if tc.old != "" {
				files[StateDirName+"/.gitignore"] = tc.old
			}
			writeTree(t, root, files)
			w := newWS(t, Options{Roots: []string{root}})
			w.StateDir()
			run := func(args ...string) string {
				cmd := exec.Command(git, args...)
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			run("init", "-q")
			got := strings.Fields(run("status", "--porcelain", "-uall"))
			want := []string{"??", StateDirName + "/commands/go/vet.md", "??", StateDirName + "/commands/review.md"}
			if !slices.Equal(got, want) {
				t.Errorf("git status lists %q; want only the custom commands %q", got, want)
			}
		})
	}
}
