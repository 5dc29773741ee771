package agent

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/redact"
)

func TestInstructionPathsFromRootToTheContextFolder(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"", []string{"AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md"}},
		{"main.go", []string{"AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md"}},
		{"cmd/x/main.go", []string{"AGENTS.md", "cmd/AGENTS.md", "cmd/x/AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md"}},
		{"../etc/passwd", []string{"AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md"}},
		{"/etc/passwd", []string{"AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md"}},
	} {
		if got := instructionPaths(tc.file); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("instructionPaths(%q) = %v; want %v", tc.file, got, tc.want)
		}
	}
}

// Past the total cap, later files are cut, then left out, each with a note.
func TestInstructionsTotalCapCutsThenLeavesOut(t *testing.T) {
	root := t.TempDir()
	full := strings.Repeat("x", MaxInstructionFileBytes)
	for _, p := range []string{"AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md", "CLAUDE.md", ".cursorrules"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(p+" "+full), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ins := loadInstructions(context.Background(), nil, root, TaskSpec{Context: EditorContext{File: "a/b/c.go"}}, ctxgate.New(root, redact.New()))
	var got []string
	for _, f := range ins.files {
		got = append(got, f.Path)
		if !f.Cut {
			t.Errorf("%s not marked cut; every file is over the per-file cap", f.Path)
		}
	}
	if want := []string{"AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md", "CLAUDE.md", ".cursorrules"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("files = %v; want %v", got, want)
	}
	if n := strings.Count(ins.text, "x"); n > MaxInstructionsBytes {
		t.Errorf("%d bytes of file text in the prompt; want at most %d", n, MaxInstructionsBytes)
	}
	for _, s := range []string{"[cut: a/b/AGENTS.md is 8.0 KiB", "--- CLAUDE.md (applies to the whole project) ---\n[left out: the 24 KiB cap", "--- .cursorrules"} {
		if !strings.Contains(ins.text, s) {
			t.Errorf("prompt lacks %q", s)
		}
	}
}

func TestInstructionsAbsentAddNothing(t *testing.T) {
	ins := loadInstructions(context.Background(), nil, t.TempDir(), TaskSpec{Context: EditorContext{File: "a/b.go"}}, &ctxgate.Gate{})
	if ins.text != "" || ins.files != nil {
		t.Errorf("no instruction files gave %+v", ins)
	}
}

func TestCutUTF8KeepsWholeCharacters(t *testing.T) {
	if got := cutUTF8("aé", 2); got != "a" {
		t.Errorf("cutUTF8(aé, 2) = %q; want %q", got, "a")
	}
}
