package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// syncBuffers makes the agent's edits visible to a command about to run
// on the disk: every open buffer that holds only agent edits, from this
// task or an earlier one (agentTexts, and the task's own record of its
// changes), on top of the text the disk still holds, is saved, by the
// editor when it can (Port.Save, agentls/saveDocuments), else by agentls
// itself (workspace.SaveBuffer: the buffer's text written to the file,
// only while the disk still holds the text the agent's edits were made
// on). A buffer that also holds the user's unsaved text is never written
// without the user: it is returned in user and named in the note, so the
// model and the user know the command ran on the saved copy.
func (h *Host) syncBuffers(ctx context.Context, ws *workspace.Workspace, port Port, changes []agent.Change) (note string, user []string) {
	byPath := make(map[string]agent.Change, len(changes))
	for _, c := range changes {
		byPath[c.Path] = c
	}
	mine := func(path, buf, disk string) bool {
		c, ok := byPath[path]
		return ok && c.Known && c.After == buf && c.Before == disk
	}
	st := h.buffersBeforeCommand(ws, mine)
	var notSaved []string
	if len(st.agent) > 0 {
		pending := st.agent
		paths := make([]string, len(st.agent))
		for i, b := range st.agent {
			paths[i] = b.p.String()
		}
		failed, err := port.Save(ctx, paths)
		switch {
		case err == nil:
			pending = nil
			for _, b := range st.agent {
				if _, bad := failed[b.p.String()]; bad {
					pending = append(pending, b)
				}
			}
		case !errors.Is(err, ErrUnsupported):
			h.logger().Warn("the editor did not save the agent's buffers", "error", err)
		}
		for _, b := range pending {
			if err := ws.SaveBuffer(ctx, b.p, b.disk); err != nil {
				h.logger().Warn("buffer not saved before a command", "file", b.p.String(), "error", err)
				notSaved = append(notSaved, b.p.String())
			}
		}
		for _, b := range st.agent {
			h.agentTexts.forget(b.abs)
		}
	}
	var notes []string
	if len(st.user) > 0 {
		var ownToo []string
		for _, f := range st.user {
			if _, ok := byPath[f]; ok {
				ownToo = append(ownToo, f)
			}
		}
		n := fmt.Sprintf("note: %s unsaved changes the user made in the editor; agentls never saves the user's text, so the command ran on the saved copy on disk, without those changes", filesPhrase(st.user))
		if len(ownToo) > 0 {
			n += " and without this task's changes to " + strings.Join(ownToo, ", ")
		}
		notes = append(notes, n+". Tell the user if that matters for what the command found.")
	}
	if len(notSaved) > 0 {
		sort.Strings(notSaved)
		notes = append(notes, fmt.Sprintf("note: agentls could not save the agent's unsaved edits to %s before the command: the command ran without them.", strings.Join(notSaved, ", ")))
	}
	return strings.Join(notes, "\n"), st.user
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// savingTool is run_command with the task's buffers synced to disk first
// and what the command changed made part of the task's changes.
type savingTool struct {
	tools.Tool
	sync  func(ctx context.Context) string
	ws    *workspace.Workspace
	guard *agent.Guard
	bufs  *bufferLog // the task's record of the user's buffers its commands met
}

func (t savingTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	note := t.sync(ctx)
	run := t.ws.StartCommand(ctx, t.guard.TaskID())
	res, err := t.Tool.Run(ctx, args)
	deltas, _ := run.End(context.WithoutCancel(ctx))
	if changed := commandChanges(t.ws, t.guard, deltas); changed != "" {
		res.Text += "\n" + changed
	}
	if files := conflicts(context.WithoutCancel(ctx), t.ws, deltas); len(files) > 0 {
		list := strings.Join(files, ", ")
		res.Text += fmt.Sprintf("\nconflict: the command changed %s on disk while the editor holds unsaved changes the user made to %s. Reads return the user's unsaved text; the disk has the command's. Neither was dropped: tell the user to keep one in the editor (save theirs, or reload the file from disk).",
			list, plural(len(files), "it", "them"))
		what := commandOf(ctx)
		if t.bufs.add(what, files, true, "conflict: "+list) {
			t.guard.Warn(fmt.Sprintf("conflict: %s changed %s on disk under your unsaved changes; save yours or reload from disk", what, list))
		}
	}
	if note != "" {
		res.Text = note + "\n" + res.Text
	}
	return res, err
}

// commandChanges makes what a command changed part of the task's changes:
// listed, diffed and undoable when agentls knew the file's text before
// (it had read or written it), listed by name otherwise. It returns a line
// for the model that names them.
func commandChanges(ws *workspace.Workspace, g *agent.Guard, deltas []workspace.FileDelta) string {
	var names []string
	for _, d := range deltas {
		p := d.Path.String()
		after := ""
		if d.Kind != workspace.Removed {
			if f, err := ws.ReadDisk(d.Path); err == nil {
				after = f.Text
			}
		}
		switch d.Kind {
		case workspace.Created:
			g.RecordCommandChange(p, "", after, true, true)
			names = append(names, p+" (created)")
		case workspace.Removed:
			g.RecordCommandChange(p, d.Before, "", d.HaveBefore, false)
			names = append(names, p+" (removed)")
		default:
			g.RecordCommandChange(p, d.Before, after, d.HaveBefore, false)
			names = append(names, p+" (changed)")
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "files the command changed (now part of this task's changes): " + strings.Join(names, ", ")
}

// conflicts names the files of deltas (what a command changed) whose
// open buffer holds the user's unsaved text, which reads prefer to the
// command's: the buffer and the disk disagree and only the user can say
// which stays. A clean buffer the editor has not reloaded yet is no
// conflict: reads return the disk (workspace.ReadFile).
func conflicts(ctx context.Context, ws *workspace.Workspace, deltas []workspace.FileDelta) []string {
	var out []string
	for _, d := range deltas {
		if d.Kind == workspace.Created {
			continue
		}
		if _, open := ws.Buffers().Get(ws.Abs(d.Path)); !open {
			continue
		}
		f, err := ws.ReadFile(ctx, d.Path)
		if err == nil && f.FromBuffer && f.Hash != d.AfterHash {
			out = append(out, d.Path.String())
		}
	}
	return out
}

// commandOf names the command of the tool call in ctx for people:
// "`go vet ./...`", or the tool's name; "the check command" outside a
// tool call; "a hook after edit_file" for the PostToolUse hooks of a tool
// that runs no program.
func commandOf(ctx context.Context) string {
	c, ok := tools.CallFrom(ctx)
	if !ok {
		return "the check command"
	}
	if !c.Effects.Has(tools.RunsProgram) {
		return "a hook after " + c.Tool
	}
	var a struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(c.Args, &a) == nil && a.Command != "" {
		return "`" + firstLineOf(a.Command, 80) + "`"
	}
	return c.Tool
}

// firstLineOf is s's first line, cut to n bytes (on a rune boundary).
func firstLineOf(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// savingCheck is the check command with the task's buffers synced first.
type savingCheck struct {
	next agent.Checker
	sync func(ctx context.Context) string
}

func (c savingCheck) Check(ctx context.Context) (bool, string, error) {
	note := c.sync(ctx)
	ok, out, err := c.next.Check(ctx)
	if note != "" {
		out = note + "\n" + out
	}
	return ok, out, err
}
