package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// clientEditor applies a task's edits: through the client's
// fs/write_text_file when it offers it (the edit lands in the editor, open
// buffers included), else atomically on disk. Every edited file is shown
// as a diff (absolute path, old text, new text) on the tool call that made
// it.
type clientEditor struct {
	p  *turnPort
	ws *workspace.Workspace
}

var _ workspace.Editor = (*clientEditor)(nil)

// change is one file's edit, computed before anything is written.
type change struct {
	abs      string
	old, new string
	create   bool
	bom      bool
}

// Apply implements workspace.Editor. Every file's new text is computed and
// checked against its base first, so a stale file writes nothing. Through
// the client, files are written one after another: a client error stops
// at that file and is returned.
func (e *clientEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	changes := make([]change, 0, len(edits))
	for _, fe := range edits {
		c := change{abs: e.ws.Abs(fe.Path), create: fe.Create}
		if !fe.Create {
			f, err := e.ws.ReadFile(ctx, fe.Path)
			if err != nil {
				return fmt.Errorf("edit %s: %w", fe.Path, err)
			}
			if fe.BaseHash != "" && f.Hash != fe.BaseHash {
				return fmt.Errorf("edit %s: %w", fe.Path, workspace.ErrStale)
			}
			c.old, c.bom = f.Text, f.BOM
		}
		text, err := workspace.ApplyEdits(c.old, fe.Edits)
		if err != nil {
			return fmt.Errorf("edit %s: %w", fe.Path, err)
		}
		c.new = text
		changes = append(changes, c)
	}
	if e.p.a.capabilities().Fs.WriteTextFile {
		for _, c := range changes {
			content := c.new
			if c.bom {
				content = "\ufeff" + content
			}
			if _, err := e.p.a.peer().WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(e.p.s.id), Path: c.abs, Content: content}); err != nil {
				return fmt.Errorf("fs/write_text_file %s: %w", c.abs, err)
			}
			// The editor holds the file now: later reads of the task see
			// what was written, saved or not.
			if doc, ok := e.p.s.bufs.Get(c.abs); ok {
				e.p.s.bufs.Open(c.abs, doc.LanguageID, doc.Version+1, c.new)
			} else {
				e.p.s.bufs.Open(c.abs, "", 1, c.new)
			}
		}
	} else if err := e.ws.DiskEditor().Apply(ctx, label, edits); err != nil {
		return err
	}
	call, _ := tools.CallFrom(ctx)
	for _, c := range changes {
		e.p.showDiff(call.ID, c)
	}
	return nil
}

// diffContent is the protocol's diff of one change; a new file has no old
// text.
func diffContent(c change) sdk.ToolCallContent {
	if c.create {
		return sdk.ToolDiffContent(c.abs, c.new)
	}
	return sdk.ToolDiffContent(c.abs, c.new, c.old)
}

// showDiff adds the diff of c to the tool call callID that made it, or,
// for an edit outside any call the client was shown (an undo), reports it
// as a call of its own.
func (p *turnPort) showDiff(callID string, c change) {
	loc := []sdk.ToolCallLocation{{Path: c.abs}}
	if !p.isOpen(callID) {
		p.a.update(p.s.id, sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(p.ownCallID("edit")),
			Title: "Edit " + c.abs, Kind: sdk.ToolKindEdit, Status: sdk.ToolCallStatusCompleted,
			Locations: loc, Content: []sdk.ToolCallContent{diffContent(c)}}})
		return
	}
	p.mu.Lock()
	p.diffs[callID] = append(p.diffs[callID], diffContent(c))
	content := append([]sdk.ToolCallContent(nil), p.diffs[callID]...)
	p.mu.Unlock()
	p.a.update(p.s.id, sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(callID),
		Content: content, Locations: loc}})
}
