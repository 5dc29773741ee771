package lsp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/lsp/server"
	"github.com/agentls/agentls/workspace"
)

// TitleRunComment is the title of the code action on an instruction
// comment (public contract).
const TitleRunComment = "Run agent on this comment"

// RunCommentArgs is the argument of agentls.runComment: the document and a
// line of the instruction comment, and the instruction as the code action
// saw it (so a comment edited or moved since is found again, or refused).
type RunCommentArgs struct {
	URI         string `json:"uri" expect:"DocumentUri"`
	Line        uint32 `json:"line"`
	Instruction string `json:"instruction"`
}

// Validate checks the arguments after decoding.
func (a *RunCommentArgs) Validate() error {
	if _, err := server.Filename(uri.URI(a.URI)); err != nil {
		return fmt.Errorf(`"uri": %v`, err)
	}
	if strings.TrimSpace(a.Instruction) == "" {
		return errors.New(`"instruction" must be a non-empty string`)
	}
	return nil
}

// RunCommentReply is the reply of agentls.runComment: agentls.run's reply,
// and whether the instruction comment was removed.
type RunCommentReply struct {
	*RunReply
	// CommentRemoved: the task completed with changes and the comment was
	// still there as written, so agentls removed it (one more edit, through
	// workspace/applyEdit when the client takes it).
	CommentRemoved bool `json:"commentRemoved"`
}

// RunCommentCommand declares agentls.runComment, the command of the code
// action "Run agent on this comment".
var RunCommentCommand = &server.Command[RunCommentArgs, RunCommentReply]{Name: "agentls.runComment"}

// CommandRunComment is the name of agentls.runComment (public contract).
var CommandRunComment = RunCommentCommand.Name

// commentActions is the code action "Run agent on this comment" when the
// request's range starts on an instruction comment of the open buffer.
func commentActions(doc workspace.Document, u string, r workspace.Range) (protocol.Command, bool) {
	in, ok := instructionAt(doc.Text, markersFor(doc.LanguageID, doc.Filename), int(r.Start.Line))
	if !ok {
		return protocol.Command{}, false
	}
	cmd, err := RunCommentCommand.New(TitleRunComment, RunCommentArgs{URI: u, Line: uint32(in.StartLine), Instruction: in.Text})
	return cmd, err == nil
}

// runCommentCommand runs an instruction comment as an edit task: the
// instruction is the prompt, the comment's lines the context. When the task
// completes with changes and the comment is still there as written (the
// model's edit did not touch it), the comment is removed, as Copilot and
// Cursor users expect of an instruction that has been carried out. Then the
// answer reaches a client with only standard LSP: the report opens with
// window/showDocument when the client declared it, else a
// window/showMessage names the report file.
func (s *Service) runCommentCommand(ctx context.Context, inv *server.Invocation, a RunCommentArgs) (RunCommentReply, error) {
	h := s.Host()
	ws, err := h.Workspace(ctx)
	if err != nil {
		s.srv.ShowMessage(ctx, protocol.MessageTypeError, "agentls: "+err.Error())
		return RunCommentReply{}, requestFailed("%s: %v", CommandRunComment, err)
	}
	name, _ := server.Filename(uri.URI(a.URI))
	p, err := ws.Resolve(name)
	if err != nil {
		return RunCommentReply{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: uri %s is not in the workspace (%s)", CommandRunComment, a.URI, strings.Join(ws.Roots(), ", "))
	}
	markers, text, err := s.commentSource(ctx, ws, p)
	if err != nil {
		return RunCommentReply{}, requestFailed("%s: %v", CommandRunComment, err)
	}
	want := strings.Join(strings.Fields(a.Instruction), " ")
	in, ok := findInstruction(text, markers, want, int(a.Line))
	if !ok {
		return RunCommentReply{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: the comment %q is no longer in %s; ask for the code actions again", CommandRunComment, cutLine(want, 60), p)
	}
	prompt := fmt.Sprintf("%s\n\n(This instruction is the comment at %s:%d. Make the change it asks for in the code. "+
		"Leave the comment itself as it is: it is removed once your change is made.)", in.Text, p, in.StartLine+1)
	rng := workspace.Range{Start: workspace.Position{Line: uint32(in.StartLine)}, End: workspace.Position{Line: uint32(in.EndLine) + 1}}
	spec, err := s.TaskSpec(ctx, ws, RunArgs{Prompt: prompt, Mode: string(agent.KindEdit), URI: a.URI, Range: &rng})
	if err != nil {
		return RunCommentReply{}, err
	}
	reply, err := s.runTask(ctx, inv, spec)
	if err != nil {
		return RunCommentReply{}, err
	}
	out := RunCommentReply{RunReply: reply}
	if reply.Status == string(agent.StateCompleted) && len(reply.ChangedFiles) > 0 {
		removed, err := s.removeComment(ctx, ws, p, markers, in)
		if err != nil {
			s.log().Warn("instruction comment not removed", "file", p.String(), "error", err)
		}
		out.CommentRemoved = removed
	}
	if !out.CommentRemoved && reply.Status != string(agent.StateCancelled) {
		s.keepCommentAnswer(ctx, name, in.Text, reply)
	}
	s.showAnswer(ctx, out)
	return out, nil
}

// commentSource is a document's comment markers and text: the open
// buffer's, else the disk's.
func (s *Service) commentSource(ctx context.Context, ws *workspace.Workspace, p workspace.Path) ([]string, string, error) {
	abs := ws.Abs(p)
	if doc, ok := s.srv.Buffers().Get(abs); ok {
		return markersFor(doc.LanguageID, abs), doc.Text, nil
	}
	f, err := ws.ReadFile(ctx, p)
	if err != nil {
		return nil, "", err
	}
	return markersFor("", abs), f.Text, nil
}

// removeComment deletes the instruction comment's lines when the file
// still holds them as written, at their place or moved by the task's
// edits; a comment the task changed or removed is left alone.
func (s *Service) removeComment(ctx context.Context, ws *workspace.Workspace, p workspace.Path, markers []string, in instruction) (bool, error) {
	f, err := ws.ReadFile(ctx, p)
	if err != nil {
		return false, err
	}
	now, ok := findInstruction(f.Text, markers, in.Text, in.StartLine)
	if !ok || !sameComment(now, in) {
		return false, nil
	}
	lines := strings.Split(f.Text, "\n")
	r := workspace.Range{Start: workspace.Position{Line: uint32(now.StartLine)}, End: workspace.Position{Line: uint32(now.EndLine) + 1}}
	if now.EndLine+1 >= len(lines) {
		// The comment is the file's last line: take the line break before it.
		if now.StartLine == 0 {
			r.End = workspace.Position{Line: uint32(now.EndLine), Character: utf16Len(lines[now.EndLine])}
		} else {
			prev := lines[now.StartLine-1]
			r.Start = workspace.Position{Line: uint32(now.StartLine - 1), Character: utf16Len(strings.TrimRight(prev, "\r"))}
			r.End = workspace.Position{Line: uint32(now.EndLine), Character: utf16Len(lines[now.EndLine])}
		}
	}
	ed := &Editor{svc: s, ws: ws}
	err = ed.Apply(ctx, "remove the instruction comment "+filepath.Base(p.String())+":"+fmt.Sprint(now.StartLine+1), []workspace.FileEdit{{
		Path: p, BaseVersion: f.Version, BaseHash: f.Hash,
		Edits: []workspace.TextEdit{{Range: r, NewText: ""}},
	}})
	if err != nil {
		return false, err
	}
	return true, nil
}

// sameComment reports whether two finds of an instruction comment have the
// same lines (the task may have moved it, not changed it).
func sameComment(a, b instruction) bool {
	if len(a.Lines) != len(b.Lines) {
		return false
	}
	for i := range a.Lines {
		if a.Lines[i] != b.Lines[i] {
			return false
		}
	}
	return true
}

// utf16Len is the length of s in UTF-16 code units (LSP positions).
func utf16Len(s string) uint32 {
	n := uint32(0)
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// showAnswer brings a comment task's answer to a client that has only
// standard LSP: its report opens with window/showDocument when the client
// declared it (and the showReport setting has not opened it already), else
// one window/showMessage holds the summary, what happened to the comment
// and the report file. It comes last, so editors that show one message at
// a time (Vim + ALE) keep it on screen.
func (s *Service) showAnswer(ctx context.Context, out RunCommentReply) {
	reply := out.RunReply
	if reply.Report == "" {
		return
	}
	if s.srv.SupportsShowDocument() {
		if s.Host().Settings().ShowReport || s.srv.ShowDocument(ctx, uri.URI(reply.Report)) {
			return
		}
	}
	msg := "agentls: " + strings.TrimSuffix(cutLine(reply.Summary, 200), ".")
	if len(reply.ChangedFiles) > 0 {
		if apply, _ := s.srv.SupportsApplyEdit(); !apply {
			msg += "; changed on disk: " + strings.Join(reply.ChangedFiles, ", ")
		}
	}
	if out.CommentRemoved {
		msg += "; the instruction comment was removed"
	}
	msg += ". The whole answer: " + uri.URI(reply.Report).FsPath()
	s.srv.ShowMessage(ctx, statusMessageType(agent.State(reply.Status)), msg)
}
