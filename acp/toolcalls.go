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

// openCall is a tool call the client was told about and not yet told the
// end of: id is the model's call id (the ACP toolCallId).
type openCall struct {
	id      string
	present tools.Presentation // how its tool described it when it started
}

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

// presentOf is how the call of a tool event looks, as its tool described
// it.
func presentOf(e agent.Event) tools.Presentation {
	if e.Present != nil {
		return *e.Present
	}
	return tools.Presentation{Title: "tool call", Kind: tools.KindOther}
}

// toolStarted opens a tool call. A call that sets the plan is shown as the
// plan itself, not as a tool call.
func (p *turnPort) toolStarted(e agent.Event) {
	pr := presentOf(e)
	if pr.AsPlan {
		return
	}
	id := p.callID(e.CallID, e.TaskID)
	p.mu.Lock()
	p.open = append(p.open, openCall{id: id, present: pr})
	p.mu.Unlock()
	tc := &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(id), Title: pr.Title,
		Kind: kindOf(pr.Kind), Status: sdk.ToolCallStatusInProgress, Locations: locations(p.s.root, pr.Locations)}
	if raw := rawArgs(e.RawArgs); raw != nil {
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

// takeCall removes and returns the open call a finish event ends: the one
// with its id (every call has one: the loop gives an id to a call the model
// sent without).
func (p *turnPort) takeCall(e agent.Event) (openCall, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.open {
		if e.CallID != "" && c.id == e.CallID {
			p.open = append(p.open[:i], p.open[i+1:]...)
			return c, true
		}
	}
	return openCall{}, false
}

// toolFinished ends a tool call with what it did. A call that was never
// opened (one shown as the plan) has nothing to end.
func (p *turnPort) toolFinished(e agent.Event) {
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
	pr := c.present
	if e.Present != nil {
		pr = e.Present.Over(c.present)
	}
	content := p.callOutcome(e, pr, diffs)
	u := &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(c.id), Status: &status, Content: content,
		Locations: locations(p.s.root, pr.Locations)}
	if title := pr.Title; title != c.present.Title && title != "" {
		u.Title = &title
	}
	if out := pr.Command; out != nil {
		u.RawOutput = map[string]any{"exitCode": out.ExitCode, "stdout": out.Stdout, "stderr": out.Stderr}
	}
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCallUpdate: u})
}

// callOutcome is what a finished call shows: the diffs of the files it
// changed (as the editor applied them, else as its tool describes them),
// then its result as its tool asks: the whole text as a block, or only the
// first line where the content is shown elsewhere (the file read, the
// diff). A failure shows its whole text: the model reads the same.
func (p *turnPort) callOutcome(e agent.Event, pr tools.Presentation, diffs []sdk.ToolCallContent) []sdk.ToolCallContent {
	text := e.Text
	if e.Call != nil && e.Call.Text != "" {
		text = e.Call.Text
	}
	content := append([]sdk.ToolCallContent(nil), diffs...)
	if len(diffs) == 0 && !e.IsError {
		for _, d := range pr.Diffs {
			if abs, ok := absPath(p.s.root, d.Path); ok {
				content = append(content, diffContent(change{abs: abs, old: d.Old, new: d.New, create: d.Created}))
			}
		}
	}
	switch {
	case e.IsError:
		if text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(text)))
		}
	case pr.Show == tools.ShowLine:
		if len(content) == 0 && e.Text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(e.Text)))
		}
	default:
		if text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(fenced(text))))
		}
	}
	return content
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
