package lsp

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentls/agentls/lsp/server"
	"strings"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Titles of the approval question's answers.
const (
	ActionAllowOnce    = "Allow once"
	ActionAllowForTask = "Allow for this task"
	ActionAlwaysPrefix = "Always allow" // followed by " `PREFIX`"
	ActionDeny         = "Deny"
	// The answers of a review question (the review setting).
	ActionKeep   = "Keep"
	ActionReject = "Reject"
)

// taskPort is the LSP side of one task (session.Port), all in this file:
// its events become $/progress, its edits workspace/applyEdit (or disk
// writes, Editor in editor.go), its approval questions
// window/showMessageRequest, saving buffers agentls/saveDocuments and the
// editor's diagnostics agentls/diagnostics (the client requests are
// declared in save.go and diagnostics.go).
type taskPort struct {
	svc    *Service
	sink   *progressSink
	answer *answerStream // nil unless the client takes agentls/answer (answer.go)
}

var _ session.Port = (*taskPort)(nil)

// Event implements agent.Sink.
func (p *taskPort) Event(e agent.Event) {
	p.sink.Event(e)
	p.answer.Event(e)
}

// Editor implements session.Port.
func (p *taskPort) Editor(ws *workspace.Workspace) workspace.Editor {
	return &Editor{svc: p.svc, ws: ws, sink: p.sink}
}

// AskUser implements session.Port: "Allow once", "Allow for this task",
// "Always allow `PREFIX`" (when the host offers a prefix) and "Deny". No
// answer within ServiceOptions.ApprovalTimeout (permission.ErrNoAnswer),
// or a client error, denies; the permission service decides what an
// unanswered question means for later ones.
func (p *taskPort) AskUser(ctx context.Context, q permission.Request) (tools.Decision, error) {
	svc := p.svc
	srv := svc.srv
	actions := []protocol.MessageActionItem{{Title: ActionAllowOnce}, {Title: ActionAllowForTask}}
	if q.Always != "" {
		actions = append(actions, protocol.MessageActionItem{Title: ActionAlwaysPrefix + " `" + q.Always + "`"})
	}
	actions = append(actions, protocol.MessageActionItem{Title: ActionDeny})
	msg := fmt.Sprintf("agentls (task %s, %q) wants to %s.", q.TaskID, cutLine(q.Prompt, 60), q.Title)
	if q.Kind == permission.KindTool && q.Path() != "" && q.Command == "" && !q.Secret {
		msg += " The file is not open in the editor, so the change goes straight to disk."
	}
	if d := previewDiff(q.Preview); d != "" && q.Kind != permission.KindReview {
		msg += "\n" + clipLines(d, 40)
	}
	review := q.Kind == permission.KindReview
	if review {
		// A review question: keep or reject the change it shows.
		actions = []protocol.MessageActionItem{{Title: ActionKeep}, {Title: ActionReject}}
		msg = fmt.Sprintf("agentls (task %s, %q): %s?\n%s", q.TaskID, cutLine(q.Prompt, 60), q.Title, clipLines(previewDiff(q.Preview), 40))
	}
	actx, cancel := context.WithTimeout(ctx, svc.opts.ApprovalTimeout)
	defer cancel()
	// While the question is open the task waits for the user, not for the
	// command (which has not started): say so, then go back.
	prev := p.sink.swapActivity("waiting for your approval to " + cutLine(q.Title, 80))
	defer p.sink.setActivity(prev)
	item, err := srv.ShowMessageRequest(actx, &protocol.ShowMessageRequestParams{
		Type: protocol.MessageTypeWarning, Message: srv.Redact(msg), Actions: actions,
	})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Deny, ctx.Err()
		}
		why := err.Error()
		if errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil {
			why = fmt.Sprintf("no answer within %s", svc.opts.ApprovalTimeout)
			srv.Logger().Warn("approval question not answered: denied", "request", q.Title, "error", why)
			return tools.Deny, fmt.Errorf("the editor could not ask the user (%s), so it is denied: %w", why, permission.ErrNoAnswer)
		}
		srv.Logger().Warn("approval question not answered: denied", "request", q.Title, "error", why)
		return tools.Deny, fmt.Errorf("the editor could not ask the user (%s), so it is denied", why)
	}
	if item == nil {
		return tools.Deny, nil
	}
	switch {
	case item.Title == ActionAllowOnce, review && item.Title == ActionKeep:
		return tools.AllowOnce, nil
	case item.Title == ActionAllowForTask:
		return tools.AllowForTask, nil
	case q.Always != "" && strings.HasPrefix(item.Title, ActionAlwaysPrefix):
		return tools.AllowAlways, nil
	}
	return tools.Deny, nil
}

// previewDiff is the unified diff of a request's preview, file by file:
// the change as the tool will apply it.
func previewDiff(files []tools.FileChange) string {
	var b strings.Builder
	for _, f := range files {
		if len(files) > 1 {
			b.WriteString(f.Path + ":\n")
		}
		for _, h := range workspace.DiffHunks(f.Before, f.After) {
			b.WriteString(h.Diff(f.Before))
		}
	}
	return b.String()
}

// Silenced implements permission.Silenced: the permission service denies
// every later question unasked (the editor never answered one and let one
// time out); the user is told once how to allow them.
func (p *taskPort) Silenced(ctx context.Context) {
	p.svc.srv.ShowMessage(ctx, protocol.MessageTypeWarning, fmt.Sprintf(
		"agentls: the editor did not answer an approval question within %s, so actions that need approval are denied for the rest of this session. "+
			`Set agentls.approval to "auto", or list commands in agentls.allowCommands, to allow them.`, p.svc.opts.ApprovalTimeout))
}

// Save implements session.Port with agentls/saveDocuments. A client that
// does not know the request, or does not answer it, is not asked again.
func (p *taskPort) Save(ctx context.Context, paths []string) (map[string]string, error) {
	svc := p.svc
	h := svc.Host()
	ws, err := h.Workspace(ctx)
	if err != nil {
		return nil, err
	}
	params := saveDocumentsParams{}
	byURI := map[string]string{}
	for _, rel := range paths {
		wp, err := ws.Resolve(rel)
		if err != nil {
			continue
		}
		u := string(uri.File(ws.Abs(wp)))
		params.URIs = append(params.URIs, u)
		byURI[u] = rel
	}
	res, err := SaveDocumentsRequest.ask(ctx, svc, params, svc.opts.SaveTimeout, &svc.saveDocs)
	if err != nil {
		if errors.Is(err, errNotAnswered) {
			return nil, fmt.Errorf("%s: %w", SaveDocumentsRequest.Method, session.ErrUnsupported)
		}
		return nil, err
	}
	failed := map[string]string{}
	for _, f := range res.Failed {
		if rel, ok := byURI[f.URI]; ok {
			failed[rel] = f.Reason
		}
	}
	return failed, nil
}

// Diagnostics implements session.Port with agentls/diagnostics.
// A client that does not know the request, or does not answer it, is not
// asked again.
func (p *taskPort) Diagnostics(ctx context.Context, paths []string) ([]session.Diagnostic, map[string]int32, error) {
	svc := p.svc
	ws, err := svc.Host().Workspace(ctx)
	if err != nil {
		return nil, nil, err
	}
	params := diagnosticsParams{URIs: []string{}}
	for _, rel := range paths {
		if wp, err := ws.Resolve(rel); err == nil {
			params.URIs = append(params.URIs, string(uri.File(ws.Abs(wp))))
		}
	}
	docs, err := DiagnosticsRequest.ask(ctx, svc, params, diagnosticsTimeout, &svc.diagnostics)
	if err != nil {
		if errors.Is(err, errNotAnswered) {
			return nil, nil, fmt.Errorf("%s: %w", DiagnosticsRequest.Method, session.ErrUnsupported)
		}
		return nil, nil, err
	}
	var out []session.Diagnostic
	versions := map[string]int32{}
	for _, doc := range docs {
		name, err := server.Filename(uri.URI(doc.URI))
		if err != nil {
			continue
		}
		wp, err := ws.Resolve(name)
		if err != nil {
			continue
		}
		if doc.Version != nil {
			versions[wp.String()] = *doc.Version
		}
		if doc.Checked != nil && !*doc.Checked {
			versions[wp.String()] = session.VersionUnchecked
		}
		for _, d := range doc.Diagnostics {
			if d.Source == "agentls" {
				continue
			}
			sev := d.Severity
			if sev == 0 {
				sev = 1
			}
			out = append(out, session.Diagnostic{Path: wp.String(), Line: int(d.Range.Start.Line) + 1, Severity: sev, Message: d.Text(), Source: d.Source})
		}
	}
	return out, versions, nil
}

// clipLines keeps the first n lines of s, saying how many were left out.
func clipLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... (%d more lines)", len(lines)-n)
}
