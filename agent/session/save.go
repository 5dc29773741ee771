package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// syncBuffers makes the task's own edits visible to a command about to run
// on the disk: every buffer the task changed that holds only the task's
// changes (the disk still has the text from before the task, the buffer the
// task's last text) is saved, by the editor when it can (Port.Save), else by
// agentls itself. A buffer that also holds the user's unsaved text is never
// written without the user: it is named in the returned note, so the model
// and the result know the command ran without those changes.
func (h *Host) syncBuffers(ctx context.Context, ws *workspace.Workspace, port Port, changes []agent.Change) string {
	type dirty struct {
		p    workspace.Path
		disk *workspace.File
	}
	var mine []dirty
	var unsaved []string
	for _, c := range changes {
		p, err := ws.Resolve(c.Path)
		if err != nil {
			continue
		}
		doc, open := ws.Buffers().Get(ws.Abs(p))
		if !open {
			continue
		}
		disk, err := ws.ReadDisk(p)
		if err != nil || disk.Text == doc.Text {
			continue
		}
		if !c.Known || doc.Text != c.After || disk.Text != c.Before {
			unsaved = append(unsaved, c.Path)
			continue
		}
		mine = append(mine, dirty{p, disk})
	}
	if len(mine) > 0 {
		pending := mine
		paths := make([]string, len(mine))
		for i, d := range mine {
			paths[i] = d.p.String()
		}
		failed, err := port.Save(ctx, paths)
		switch {
		case err == nil:
			pending = nil
			for _, d := range mine {
				if _, bad := failed[d.p.String()]; bad {
					pending = append(pending, d)
				}
			}
		case !errors.Is(err, ErrUnsupported):
			h.logger().Warn("the editor did not save the task's buffers", "error", err)
		}
		for _, d := range pending {
			if err := ws.SaveBuffer(ctx, d.p, d.disk.Hash); err != nil {
				h.logger().Warn("buffer not saved before a command", "file", d.p.String(), "error", err)
				unsaved = append(unsaved, d.p.String())
			}
		}
	}
	if len(unsaved) == 0 {
		return ""
	}
	sort.Strings(unsaved)
	return fmt.Sprintf("note: %s %s unsaved changes in the editor that are not only this task's (the user's own edits), so agentls did not save %s: the command ran against the file on disk, without this task's changes to %s.",
		strings.Join(unsaved, ", "), plural(len(unsaved), "has", "have"), plural(len(unsaved), "it", "them"), plural(len(unsaved), "it", "them"))
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
}

func (t savingTool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	note := t.sync(ctx)
	run := t.ws.StartCommand(ctx, t.guard.TaskID())
	res, err := t.Tool.Run(ctx, args)
	deltas, _ := run.End(context.WithoutCancel(ctx))
	if changed := commandChanges(t.ws, t.guard, deltas); changed != "" {
		res.Text += "\n" + changed
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
