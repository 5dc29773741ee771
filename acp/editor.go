package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

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
}

// Apply implements workspace.Editor with the workspace's plan: every
// file's new text is computed and checked against its base by the one
// staleness rule (workspace.Plan) first, so a stale file writes nothing,
// and what is written and shown is the plan's text. Through the client,
// files are written one after another: a client error stops at that file
// and is returned.
func (e *clientEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	plan, err := e.ws.Plan(ctx, edits)
	if err != nil {
		return err
	}
	if e.p.a.capabilities().Fs.WriteTextFile {
		for _, pf := range plan.Files {
			if _, err := e.p.a.peer().WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(e.p.s.id), Path: pf.Abs, Content: string(pf.Bytes())}); err != nil {
				return fmt.Errorf("fs/write_text_file %s: %w", pf.Abs, err)
			}
			// A client that answers reads is asked again at the next
			// read. One that does not: it holds the file now, and later
			// reads of the task see what was written, saved or not.
			if e.p.a.capabilities().Fs.ReadTextFile {
				continue
			}
			if doc, ok := e.p.s.bufs.Get(pf.Abs); ok {
				e.p.s.bufs.Open(pf.Abs, doc.LanguageID, doc.Version+1, pf.After)
			} else {
				e.p.s.bufs.Open(pf.Abs, "", 1, pf.After)
			}
		}
	} else if err := e.ws.DiskEditor().Apply(ctx, label, plan.FileEdits()); err != nil {
		return err
	}
	for _, pf := range plan.Files {
		e.p.showDiff(ctx, change{abs: pf.Abs, old: pf.Before, new: pf.After, create: pf.Edit.Create})
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
