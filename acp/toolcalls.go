package acp

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
)

// Tool calls show what happened: a command's whole output as text, an
// edit as the diff of each file it changed, a read or a search as the
// locations it touched. A call's toolCallId is the model's call id
// (agent.Event.CallID), which approval requests carry too.

// callID is the toolCallId of a call: the model's id, or one made up for
// a call that has none.
func (p *turnPort) callID(modelID, taskID string) string {
	if modelID != "" {
		return modelID
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	return fmt.Sprintf("%s-%d", taskID, p.n)
}

// eventArgs reads a tool event's arguments: the model's whole JSON when
// the event has it, else the one-line summary.
func eventArgs(e agent.Event) (callArgs, map[string]any) {
	if len(e.RawArgs) > 0 {
		if a, raw := parseArgs(string(e.RawArgs)); raw != nil {
			return a, raw
		}
	}
	return parseArgs(e.Args)
}

// toolStarted opens a tool call. update_plan is shown as the plan itself,
// not as a tool call.
func (p *turnPort) toolStarted(e agent.Event) {
	if e.Tool == "update_plan" {
		return
	}
	args, raw := eventArgs(e)
	id := p.callID(e.CallID, e.TaskID)
	p.mu.Lock()
	p.open = append(p.open, openCall{id: id, tool: e.Tool, args: args})
	p.mu.Unlock()
	tc := &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(id), Title: toolTitle(e.Tool, args),
		Kind: toolKind(e.Tool), Status: sdk.ToolCallStatusInProgress, Locations: p.locations(args)}
	if raw != nil {
		tc.RawInput = raw
	}
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCall: tc})
}

// problem shows a failure of the user's own programs (an MCP server that
// did not start or failed a call, a hook that blocked or failed) as a
// failed tool call of its own: its first line the title, the whole text
// (with the end of the program's stderr) the content, where the client
// shows the agent's steps.
func (p *turnPort) problem(e agent.Event) {
	p.mu.Lock()
	p.problems++
	n := p.problems
	p.mu.Unlock()
	title, _, _ := strings.Cut(strings.TrimSpace(e.Text), "\n")
	id := fmt.Sprintf("problem-%s-%d", e.TaskID, n)
	if e.TaskID == "" {
		id = fmt.Sprintf("problem-%d", n)
	}
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(id), Title: title,
		Kind: sdk.ToolKindOther, Status: sdk.ToolCallStatusFailed,
		Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(e.Text))}}})
}

func (p *turnPort) locations(a callArgs) []sdk.ToolCallLocation {
	abs, ok := absPath(p.s.root, a.Path)
	if !ok {
		return nil
	}
	loc := sdk.ToolCallLocation{Path: abs}
	if a.Line > 0 {
		line := a.Line
		loc.Line = &line
	} else if a.Offset > 0 {
		line := a.Offset
		loc.Line = &line
	}
	return []sdk.ToolCallLocation{loc}
}

// takeCall removes and returns the open call a finish event ends: the one
// with its id, or (no id) the oldest of the same tool.
func (p *turnPort) takeCall(e agent.Event) (openCall, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.open {
		if (e.CallID != "" && c.id == e.CallID) || (e.CallID == "" && c.tool == e.Tool) {
			p.open = append(p.open[:i], p.open[i+1:]...)
			return c, true
		}
	}
	return openCall{}, false
}

// toolFinished ends a tool call with what it did.
func (p *turnPort) toolFinished(e agent.Event) {
	if e.Tool == "update_plan" {
		return
	}
	c, ok := p.takeCall(e)
	if !ok {
		return
	}
	p.mu.Lock()
	diffs := p.diffs[c.id]
	delete(p.diffs, c.id)
	p.mu.Unlock()
	status := sdk.ToolCallStatusCompleted
	if e.IsError {
		status = sdk.ToolCallStatusFailed
	}
	content, locs := p.callOutcome(e, c, diffs)
	u := &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(c.id), Status: &status, Content: content, Locations: locs}
	if e.Call != nil {
		if out, ok := e.Call.Data.(*tools.CommandOutput); ok {
			u.RawOutput = map[string]any{"exitCode": out.ExitCode, "stdout": out.Stdout, "stderr": out.Stderr}
		}
	}
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCallUpdate: u})
}

// callOutcome is what a finished call shows: its content and, for reads
// and searches, the locations it read.
func (p *turnPort) callOutcome(e agent.Event, c openCall, diffs []sdk.ToolCallContent) ([]sdk.ToolCallContent, []sdk.ToolCallLocation) {
	text := e.Text
	if e.Call != nil && e.Call.Text != "" {
		text = e.Call.Text
	}
	content := append([]sdk.ToolCallContent(nil), diffs...)
	var locs []sdk.ToolCallLocation
	switch {
	case e.IsError:
		// What went wrong, in full: the model reads the same.
		if text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(text)))
		}
	case e.Tool == "run_command":
		content = append(content, sdk.ToolContent(sdk.TextBlock(fenced(text))))
	case e.Tool == "edit_file" || e.Tool == "write_file":
		if len(diffs) == 0 && e.Text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(e.Text)))
		}
	case e.Tool == "read_file":
		// The file is shown where it is; the text the model read is not
		// repeated in the conversation.
		locs = p.locations(c.args)
		if e.Call != nil {
			if out, ok := e.Call.Data.(*tools.ReadFileOutput); ok && out.First > 0 && len(locs) == 1 {
				line := out.First
				locs[0].Line = &line
			}
		}
		if e.Text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(e.Text)))
		}
	case e.Tool == "grep":
		if e.Call != nil {
			if out, ok := e.Call.Data.(*tools.GrepOutput); ok {
				for _, f := range out.Files {
					if abs, ok := absPath(p.s.root, f); ok {
						locs = append(locs, sdk.ToolCallLocation{Path: abs})
					}
				}
			}
		}
		if text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(fenced(text))))
		}
	default:
		if text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(fenced(text))))
		}
	}
	return content, locs
}

// fenced puts text in a Markdown code block whose fence no line of it
// closes.
func fenced(text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

// openCallOf is the open call with id.
func (p *turnPort) openCallOf(id string) (openCall, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open {
		if c.id == id {
			return c, true
		}
	}
	return openCall{}, false
}

// closeCalls ends every call still open (a cancelled turn: the loop
// publishes nothing after the cancel).
func (p *turnPort) closeCalls(status sdk.ToolCallStatus) {
	p.mu.Lock()
	open := p.open
	p.open = nil
	p.mu.Unlock()
	for _, c := range open {
		st := status
		p.a.update(p.s.id, sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(c.id), Status: &st}})
	}
}

// showDiff adds the diff of c to the tool call that is editing (the call
// of ctx), or, for an edit outside any call (an undo), reports it as a
// call of its own.
func (p *turnPort) showDiff(ctx context.Context, c change) {
	loc := []sdk.ToolCallLocation{{Path: c.abs}}
	var call openCall
	ok := false
	if tc, has := tools.CallFrom(ctx); has {
		call, ok = p.openCallOf(tc.ID)
	}
	if !ok {
		id := p.callID("", "edit-"+filepath.Base(c.abs))
		p.a.update(p.s.id, sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(p.s.id + "-" + id),
			Title: "Edit " + c.abs, Kind: sdk.ToolKindEdit, Status: sdk.ToolCallStatusCompleted,
			Locations: loc, Content: []sdk.ToolCallContent{diffContent(c)}}})
		return
	}
	p.mu.Lock()
	p.diffs[call.id] = append(p.diffs[call.id], diffContent(c))
	content := append([]sdk.ToolCallContent(nil), p.diffs[call.id]...)
	p.mu.Unlock()
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(call.id),
		Content: content, Locations: loc}})
}
