package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/tools"
)

// errPermissionCancelled is returned by Ask when the client answered a
// permission request "cancelled": the turn ends as cancelled, the model is
// not called again.
var errPermissionCancelled = errors.New("the client cancelled the permission request")

// AskUser implements session.Port with session/request_permission: allow
// once, allow always (only when the request names what it would remember),
// reject once, reject always (the permission service remembers it for the
// conversation).
//
// The request names the tool call the client already shows (its title is
// kept) and carries what the user is asked to allow: the whole command,
// and the diff of each file of the request's preview, which the tool
// computed from the change it applies (the file's text as the client
// holds it, and the text after).
func (p *turnPort) AskUser(ctx context.Context, q permission.Request) (tools.Decision, error) {
	if (q.Kind == permission.KindSettings || q.Kind == permission.KindMCPFile) && p.a.capabilities().Elicitation != nil && p.a.capabilities().Elicitation.Form != nil {
		// Not a tool call's question: a form, where the client has them.
		return p.elicit(ctx, q)
	}
	opts := []sdk.PermissionOption{{OptionId: optAllowOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if q.Always != "" {
		opts = append(opts, sdk.PermissionOption{OptionId: optAllowAlways, Name: "Always allow `" + q.Always + "`", Kind: sdk.PermissionOptionKindAllowAlways})
	}
	opts = append(opts,
		sdk.PermissionOption{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		sdk.PermissionOption{OptionId: optRejectAlways, Name: "Always reject in this session", Kind: sdk.PermissionOptionKindRejectAlways})

	tc := sdk.ToolCallUpdate{Content: askContent(q)}
	if _, open := p.openCallOf(q.CallID); open && q.CallID != "" {
		tc.ToolCallId = sdk.ToolCallId(q.CallID)
	} else {
		// Not from a call the client has seen: this request announces it.
		tc.ToolCallId = sdk.ToolCallId(p.callID("", q.TaskID))
		title := q.Title
		kind := toolKind(q.Tool)
		tc.Title, tc.Kind = &title, &kind
	}
	if len(q.Args) > 0 {
		var raw map[string]any
		if json.Unmarshal(q.Args, &raw) == nil {
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
	return decision(string(resp.Outcome.Selected.OptionId)), nil
}

// askContent is what a permission request shows: the command in full,
// the diff of each file of the request's preview (computed by the tool
// from the change it applies), or the request's one line.
func askContent(q permission.Request) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	if q.Command != "" {
		out = append(out, sdk.ToolContent(sdk.TextBlock(fenced("$ "+q.Command))))
	}
	for _, f := range q.Preview {
		out = append(out, diffContent(change{abs: f.Abs, old: f.Before, new: f.After, create: f.Create}))
	}
	if len(out) == 0 && q.Title != "" {
		out = append(out, sdk.ToolContent(sdk.TextBlock(q.Title)))
	}
	return out
}

// elicit asks a question that is no tool call's (the settings changed
// since start-up, a workspace .mcp.json's servers) as a form
// (elicitation/create) with one choice: the answers of a permission
// request. Declined, the answer is no; cancelled, the turn is cancelled as
// with a permission request.
func (p *turnPort) elicit(ctx context.Context, q permission.Request) (tools.Decision, error) {
	choices := []any{map[string]any{"const": optAllowOnce, "title": "Allow once"}}
	if q.Always != "" {
		choices = append(choices, map[string]any{"const": optAllowAlways, "title": "Always allow " + q.Always})
	}
	choices = append(choices, map[string]any{"const": optRejectOnce, "title": "Reject"})
	title := "agentls asks"
	msg := q.Title
	if q.Command != "" {
		msg += "\n\n" + q.Command
	}
	req := sdk.UnstableCreateElicitationRequest{Form: &sdk.UnstableCreateElicitationForm{
		Mode: "form", Message: msg, Meta: elicitationScope(p.s.id),
		RequestedSchema: sdk.UnstableElicitationSchema{Type: "object", Title: &title, Required: []string{"decision"},
			Properties: map[string]any{"decision": map[string]any{"type": "string", "title": "Decision", "oneOf": choices}}},
	}}
	resp, err := p.a.peer().UnstableCreateElicitation(ctx, req)
	if err != nil {
		return tools.Deny, fmt.Errorf("elicitation: %w", err)
	}
	switch {
	case resp.Accept != nil:
		v, _ := resp.Accept.Content["decision"].(string)
		return decision(v), nil
	case resp.Cancel != nil:
		_, _ = p.s.host.Cancel(q.TaskID)
		return tools.Deny, errPermissionCancelled
	}
	return tools.Deny, nil
}
