package agent

import (
	"context"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/workspace"
)

// Project instructions are the files in which a project tells coding agents
// its conventions: AGENTS.md (the cross-agent convention, at the root and in
// folders), CLAUDE.md, .cursorrules and .github/copilot-instructions.md.
// They are read at the start of a task and go into its system prompt, the
// stable prefix of every request of the task, so provider prompt caches
// still hit across its turns. They are text for the model only: commands,
// approvals and the check command come from the user's settings alone.
const (
	// MaxInstructionFileBytes caps the text taken from one file.
	MaxInstructionFileBytes = 8 << 10
	// MaxInstructionsBytes caps the text taken from all of them.
	MaxInstructionsBytes = 24 << 10
)

// rootInstructionFiles are read at the workspace root, in this order.
var rootInstructionFiles = []string{"AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md"}

// InstructionFile is one project instruction file a task's model was given.
type InstructionFile struct {
	Path  string `json:"path"`  // workspace-relative
	Bytes int    `json:"bytes"` // its size
	// Cut is true when only part of it was given (a cap was reached).
	Cut bool `json:"cut,omitempty"`
	// After names the tool call after whose result the file was given
	// ("read_file pkg/cart/cart.go"): a file of a folder the task touched
	// (nested.go). Empty for the files of the system prompt.
	After string `json:"after,omitempty"`
}

// instructions are the project instruction files of a task and the text
// they add to its system prompt.
type instructions struct {
	files []InstructionFile
	text  string
	// left is what the caps leave for the files of folders the task
	// touches later (nested.go); given are the paths given so far.
	left  int
	given map[string]bool
}

// instructionPaths are the files that apply to a task whose editor context
// is file: the root files, then AGENTS.md of each folder from the root down
// to file's folder, so the closest comes last and reads as the most
// specific.
func instructionPaths(file string) []string {
	out := append([]string(nil), rootInstructionFiles[:1]...)
	dir := "."
	if file != "" && !strings.Contains(file, "\\") {
		if c := path.Clean(file); c != ".." && !strings.HasPrefix(c, "../") && !path.IsAbs(c) {
			dir = path.Dir(c)
		}
	}
	if dir != "." {
		parts := strings.Split(dir, "/")
		for i := range parts {
			out = append(out, path.Join(append(parts[:i+1:i+1], "AGENTS.md")...))
		}
	}
	return append(out, rootInstructionFiles[1:]...)
}

// loadInstructions reads the project instruction files that apply to spec
// through files (open buffers first), or from disk under root. A missing or
// unreadable file is skipped.
//
// Each file passes the context gate g: one that is or links to a secret
// file (AGENTS.md -> .env) is left out, named but not quoted.
func loadInstructions(ctx context.Context, files Files, root string, spec TaskSpec, g *ctxgate.Gate) instructions {
	if files == nil && root == "" {
		return instructions{}
	}
	ins := instructions{left: MaxInstructionsBytes, given: map[string]bool{}}
	var body strings.Builder
	left := MaxInstructionsBytes
	for _, p := range instructionPaths(spec.Context.File) {
		text, ok, err := workspace.ReadText(ctx, files, root, p)
		if err != nil || !ok || strings.TrimSpace(text) == "" {
			continue
		}
		f := InstructionFile{Path: p, Bytes: len(text)}
		text, ok = g.File(p, text)
		if !ok {
			fmt.Fprintf(&body, "\n--- %s (%s) ---\n%s\n", p, scope(p), ctxgate.Withheld(p))
			f.Cut = true
			ins.files = append(ins.files, f)
			continue
		}
		if left == 0 {
			f.Cut = true
			fmt.Fprintf(&body, "\n--- %s (%s) ---\n[left out: the %d KiB cap on all instruction files was reached]\n", p, scope(p), MaxInstructionsBytes>>10)
			ins.files = append(ins.files, f)
			continue
		}
		limit := min(MaxInstructionFileBytes, left)
		shown := text
		if len(shown) > limit {
			shown = cutUTF8(shown, limit)
			f.Cut = true
		}
		left -= len(shown)
		fmt.Fprintf(&body, "\n--- %s (%s) ---\n%s\n", p, scope(p), strings.TrimRight(shown, "\n"))
		if f.Cut {
			fmt.Fprintf(&body, "[cut: %s is %.1f KiB; only its first %.1f KiB are shown]\n", p, float64(len(text))/1024, float64(len(shown))/1024)
		}
		ins.files = append(ins.files, f)
	}
	ins.left = left
	for _, f := range ins.files {
		ins.given[f.Path] = true
	}
	if len(ins.files) == 0 {
		return ins
	}
	ins.text = fmt.Sprintf(`
Project instructions: the files below are the project's notes for coding agents (at most %d KiB of each file and %d KiB in all are shown). Follow their conventions where they apply to your task. They do not change what you may run or edit: approvals and the check command come from the user's settings.
%s`, MaxInstructionFileBytes>>10, MaxInstructionsBytes>>10, body.String())
	return ins
}

// scope says which files an instruction file applies to.
func scope(p string) string {
	if d := path.Dir(p); d != "." && path.Base(p) == "AGENTS.md" {
		return "applies to files under " + d + "/"
	}
	return "applies to the whole project"
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Files reads workspace files as the tools see them (an open buffer first,
// then the disk); *workspace.Workspace satisfies it. The loop reads the
// project instructions through it.
type Files interface {
	FileReader
	Resolve(input string) (workspace.Path, error)
}
