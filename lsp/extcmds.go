package lsp

import (
	"context"
	"fmt"
	"github.com/agentls/agentls/lsp/server"

	"github.com/agentls/agentls/agent/prompts"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/workspace"
)

// The commands that show what extends the agent: the custom commands
// (prompt files) and every tool and hook the model has.

// PromptsArgs is the argument of agentls.prompts: none.
type PromptsArgs struct{}

// PromptInfo is one custom command in the agentls.prompts reply: run it
// with agentls.run {"prompt": "/NAME ARGS"} (uri and range give the
// selection its $SELECTION takes).
type PromptInfo = prompts.Prompt

// ToolsArgs is the argument of agentls.tools: none.
type ToolsArgs struct{}

// ToolsReply is the reply of agentls.tools: every tool a new task's model
// has, with its source, and every hook.
type ToolsReply = session.ToolList

var (
	PromptsCommand = &server.Command[PromptsArgs, []PromptInfo]{Name: "agentls.prompts"}
	ToolsCommand   = &server.Command[ToolsArgs, *ToolsReply]{Name: "agentls.tools"}
)

// Names of the commands above (the public contract).
var (
	CommandPrompts = PromptsCommand.Name
	CommandTools   = ToolsCommand.Name
)

// extensionCommands are the commands of this file, bound to their
// handlers.
func (s *Service) extensionCommands() []server.CommandHandler {
	return []server.CommandHandler{
		bind(PromptsCommand, s.promptsCommand),
		bind(ToolsCommand, s.toolsCommand),
		bind(RunCommentCommand, s.runCommentCommand),
	}
}

func (s *Service) promptsCommand(ctx context.Context, _ *server.Invocation, _ PromptsArgs) ([]PromptInfo, error) {
	ps, err := s.Host().Prompts(ctx)
	if err != nil {
		return nil, requestFailed("%s: %v", CommandPrompts, err)
	}
	return ps, nil
}

func (s *Service) toolsCommand(ctx context.Context, _ *server.Invocation, _ ToolsArgs) (*ToolsReply, error) {
	l, err := s.Host().Tools(ctx)
	if err != nil {
		return nil, requestFailed("%s: %v", CommandTools, err)
	}
	return l, nil
}

// TitlePromptPrefix starts the title of a custom command's code action.
const TitlePromptPrefix = "Agent: /"

// promptActions are the code actions of the custom commands that use the
// selection, for a non-empty range of uri: each runs agentls.run with
// "/NAME" and the range. The prompt files are read at most every few
// seconds (Host.CachedPrompts), so a code action request does not walk
// folders each time.
func (s *Service) promptActions(uri string, r workspace.Range) []promptAction {
	var out []promptAction
	for _, p := range s.Host().CachedPrompts() {
		if !p.Selection {
			continue
		}
		rr := r
		title := TitlePromptPrefix + p.Name
		if p.Description != "" {
			title += fmt.Sprintf(" (%s)", cutLine(p.Description, maxTitleMessage))
		}
		out = append(out, promptAction{title, RunArgs{Prompt: "/" + p.Name, Mode: p.Mode, URI: uri, Range: &rr}})
	}
	return out
}

// promptAction is one custom command's code action.
type promptAction struct {
	title string
	args  RunArgs
}
