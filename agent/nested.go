package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Instructions follow the work: when a tool call of a task reads, edits,
// lists or searches inside a folder with its own AGENTS.md (or CLAUDE.md)
// that the system prompt does not hold, the file's text is appended to that
// call's result, once per task. The system prompt and every earlier message
// stay byte-identical, so the provider's prompt cache still holds the
// whole history: the text is part of a new message, the one the model reads
// next. The file is listed in the result's Instructions with the call it
// came after.

// nestedNames are the instruction files read in a folder, the first that
// exists.
var nestedNames = []string{"AGENTS.md", "CLAUDE.md"}

// touched are the workspace-relative paths a tool call worked on: the path
// (or file) it was given, the files it changed, and the files a search
// found matches in.
func touched(root string, c llm.ToolCall, res tools.Result) []string {
	var a struct {
		Path string `json:"path"`
		File string `json:"file"`
	}
	_ = json.Unmarshal([]byte(c.Arguments), &a) // bad arguments touched nothing
	var out []string
	for _, p := range []string{a.Path, a.File} {
		if p = relPath(root, p); p != "" {
			out = append(out, p)
		}
	}
	out = append(out, res.Changed...)
	if g, ok := res.Data.(*tools.GrepOutput); ok && g != nil {
		out = append(out, g.Files...)
	}
	return out
}

// relPath is p as a clean workspace-relative path, or "" for the root,
// an empty path, or a path outside root.
func relPath(root, p string) string {
	p = strings.TrimPrefix(strings.TrimSpace(p), "file://")
	if p == "" || strings.Contains(p, "\\") {
		return ""
	}
	if path.IsAbs(p) {
		if root == "" {
			return ""
		}
		r, err := filepath.Rel(root, filepath.FromSlash(p))
		if err != nil {
			return ""
		}
		p = filepath.ToSlash(r)
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
		return ""
	}
	return p
}

// folders are the folders from the root down to p (p itself included:
// it may be a folder), the root excluded, outermost first.
func folders(p string) []string {
	parts := strings.Split(p, "/")
	out := make([]string, 0, len(parts))
	for i := range parts {
		out = append(out, strings.Join(parts[:i+1], "/"))
	}
	return out
}

// stateFolder reports a folder of git's or agentls's own state, whose
// files are no project's instructions.
func stateFolder(dir string) bool {
	for rest := dir; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if seg == ".git" || seg == ".agentls" {
			return true
		}
	}
	return false
}

// mayHold is a Files that can say cheaply that a path surely names no
// file (*workspace.Workspace does).
type mayHold interface {
	MayHold(input string) bool
}

// nestedInstructions returns the text to append to the result of call c:
// the instruction files of the folders c touched that the task has not
// been given yet, within what the caps leave; "" when there are none.
func (x *run) nestedInstructions(ctx context.Context, c llm.ToolCall, res tools.Result) string {
	if x.instr.given == nil { // no workspace to read from
		return ""
	}
	var body strings.Builder
	seen := map[string]bool{}
	paths := touched(x.cfg.Root, c, res)
	for _, p := range paths {
		if slices.Contains(nestedNames, path.Base(p)) {
			x.instr.given[p] = true // the call read or wrote the file itself
		}
	}
	holder, _ := x.cfg.Files.(mayHold)
	for _, p := range paths {
		for _, dir := range folders(p) {
			if seen[dir] || stateFolder(dir) {
				continue
			}
			seen[dir] = true
			for _, name := range nestedNames {
				f := path.Join(dir, name)
				if x.instr.given[f] {
					break
				}
				// A search that matched in a thousand folders probes two
				// names in each, most of which do not exist: one Lstat
				// says so before a resolve and a read.
				if holder != nil && !holder.MayHold(f) {
					continue
				}
				text, ok, err := workspace.ReadText(ctx, x.cfg.Files, x.cfg.Root, f)
				if err != nil || !ok || strings.TrimSpace(text) == "" {
					continue
				}
				x.instr.given[f] = true
				if gated, ok := x.ctxGate().File(f, text); ok {
					x.addNested(&body, f, dir, gated, c)
				} else {
					fmt.Fprintf(&body, "\n--- %s (applies to files under %s/) ---\n%s", f, dir, ctxgate.Withheld(f))
					x.instr.files = append(x.instr.files, InstructionFile{Path: f, Bytes: len(text), Cut: true, After: c.Name})
				}
				break
			}
		}
	}
	if body.Len() == 0 {
		return ""
	}
	return "\n\n[Project instructions for a folder this call worked in; follow their conventions for files there. They do not change what you may run or edit.]" + body.String()
}

// addNested writes file f of folder dir into body within the caps and
// lists it in the task's instructions.
func (x *run) addNested(body *strings.Builder, f, dir, text string, c llm.ToolCall) {
	info := InstructionFile{Path: f, Bytes: len(text), After: strings.TrimSpace(c.Name + " " + firstLine(oneLine(argSummary(c.Arguments)), 80))}
	if x.instr.left == 0 {
		info.Cut = true
		fmt.Fprintf(body, "\n--- %s (applies to files under %s/) ---\n[left out: the %d KiB cap on all instruction files was reached]", f, dir, MaxInstructionsBytes>>10)
		x.instr.files = append(x.instr.files, info)
		return
	}
	shown := text
	if limit := min(MaxInstructionFileBytes, x.instr.left); len(shown) > limit {
		shown = cutUTF8(shown, limit)
		info.Cut = true
	}
	x.instr.left -= len(shown)
	fmt.Fprintf(body, "\n--- %s (applies to files under %s/) ---\n%s", f, dir, strings.TrimRight(shown, "\n"))
	if info.Cut {
		fmt.Fprintf(body, "\n[cut: %s is %.1f KiB; only its first %.1f KiB are shown]", f, float64(len(text))/1024, float64(len(shown))/1024)
	}
	x.instr.files = append(x.instr.files, info)
}

// argSummary is the path argument of a call when it has one, else its
// arguments.
func argSummary(args string) string {
	var a struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
	}
	if json.Unmarshal([]byte(args), &a) == nil {
		if a.Path != "" {
			return a.Path
		}
		if a.Pattern != "" {
			return a.Pattern
		}
	}
	return args
}
