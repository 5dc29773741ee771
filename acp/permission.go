package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// errPermissionCancelled is returned by Ask when the client answered a
// permission request "cancelled": the turn ends as cancelled, the model is
// not called again.
var errPermissionCancelled = errors.New("the client cancelled the permission request")

// Ask implements session.Port with session/request_permission: allow once,
// allow always (only when the host names a command prefix it may
// remember), reject once, reject always (the host's approval policy
// remembers it for the conversation).
//
// The request names the tool call the client already shows (its title is
// kept) and carries what the user is asked to allow: the whole command, or
// the diff of the edit (the file's text as the client holds it, and the
// text after the change).
func (p *turnPort) Ask(ctx context.Context, q session.Question) (tools.Decision, error) {
	opts := []sdk.PermissionOption{{OptionId: optAllowOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if q.AlwaysPrefix != "" {
		opts = append(opts, sdk.PermissionOption{OptionId: optAllowAlways, Name: "Always allow `" + q.AlwaysPrefix + "`", Kind: sdk.PermissionOptionKindAllowAlways})
	}
	opts = append(opts,
		sdk.PermissionOption{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		sdk.PermissionOption{OptionId: optRejectAlways, Name: "Always reject in this session", Kind: sdk.PermissionOptionKindRejectAlways})

	tc := sdk.ToolCallUpdate{Content: p.askContent(ctx, q)}
	if _, open := p.openCallOf(q.Request.CallID); open && q.Request.CallID != "" {
		tc.ToolCallId = sdk.ToolCallId(q.Request.CallID)
	} else {
		// Not from a call the client has seen: this request announces it.
		tc.ToolCallId = sdk.ToolCallId(p.callID("", q.TaskID))
		title := q.Request.Summary
		kind := toolKind(q.Request.Tool)
		tc.Title, tc.Kind = &title, &kind
	}
	if len(q.Request.Args) > 0 {
		var raw map[string]any
		if json.Unmarshal(q.Request.Args, &raw) == nil {
			tc.RawInput = raw
		}
	}
	resp, err := p.a.peer().RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(p.s.id), ToolCall: tc, Options: opts})
	if err != nil {
		return tools.Deny, fmt.Errorf("permission request: %w", err)
	}
	if resp.Outcome.Selected == nil {
		// "cancelled": the user dismissed the turn, with or without a
		// session/cancel. The task ends as cancelled.
		_, _ = p.s.host.Cancel(q.TaskID)
		return tools.Deny, errPermissionCancelled
	}
	opt := string(resp.Outcome.Selected.OptionId)
	if opt == optAllowAlways && q.AlwaysPrefix == "" {
		return tools.AllowOnce, nil
	}
	return decision(opt), nil
}

// askContent is what a permission request shows: the command in full, the
// diff of an edit, or the host's one line.
func (p *turnPort) askContent(ctx context.Context, q session.Question) []sdk.ToolCallContent {
	r := q.Request
	switch {
	case q.Review != nil:
		// The review setting: the change itself, to keep or reject.
		return []sdk.ToolCallContent{diffContent(change{abs: q.Review.Abs, old: q.Review.Before, new: q.Review.After, create: q.Review.Create})}
	case r.Command != "":
		return []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(fenced("$ " + r.Command)))}
	case r.Tool == "edit_file" || r.Tool == "write_file":
		if c, ok := p.previewEdit(ctx, r); ok {
			return []sdk.ToolCallContent{diffContent(c)}
		}
	}
	if r.Summary != "" {
		return []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(r.Summary))}
	}
	return nil
}

// editArgs are the arguments of edit_file and write_file a preview needs.
type editArgs struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
	Edits      []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
	Content *string `json:"content"`
}

// previewEdit is the change an edit_file or write_file call asks to make:
// the file's text now (the client's, when it answers reads) and after.
// The tool itself checked the edit before asking; false when it cannot be
// previewed here.
func (p *turnPort) previewEdit(ctx context.Context, r tools.ApprovalRequest) (change, bool) {
	var a editArgs
	if json.Unmarshal(r.Args, &a) != nil || a.Path == "" {
		return change{}, false
	}
	ws, err := p.s.host.Workspace(ctx)
	if err != nil {
		return change{}, false
	}
	wp, err := ws.Resolve(a.Path)
	if err != nil {
		return change{}, false
	}
	c := change{abs: ws.Abs(wp)}
	f, err := ws.ReadFile(ctx, wp)
	switch {
	case err == nil:
		c.old = f.Text
	case errors.Is(err, workspace.ErrNotExist):
		c.create = true
	default:
		return change{}, false
	}
	if r.Tool == "write_file" {
		if a.Content == nil {
			return change{}, false
		}
		c.new = *a.Content
		if f != nil && f.CRLF {
			c.new = strings.ReplaceAll(strings.ReplaceAll(c.new, "\r\n", "\n"), "\n", "\r\n")
		}
		return c, true
	}
	type repl struct {
		old, new string
		all      bool
	}
	var rs []repl
	if a.OldString != nil && a.NewString != nil {
		rs = append(rs, repl{*a.OldString, *a.NewString, a.ReplaceAll})
	}
	for _, e := range a.Edits {
		rs = append(rs, repl{e.OldString, e.NewString, e.ReplaceAll})
	}
	if c.create || len(rs) == 0 {
		return change{}, false
	}
	text := c.old
	for _, x := range rs {
		old, nw := x.old, x.new
		if f.CRLF {
			old = strings.ReplaceAll(strings.ReplaceAll(old, "\r\n", "\n"), "\n", "\r\n")
			nw = strings.ReplaceAll(strings.ReplaceAll(nw, "\r\n", "\n"), "\n", "\r\n")
		}
		if old == "" || !strings.Contains(text, old) {
			return change{}, false
		}
		n := 1
		if x.all {
			n = -1
		}
		text = strings.Replace(text, old, nw, n)
	}
	c.new = text
	return c, true
}
