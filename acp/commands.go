package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"
)

// The slash commands that extend the agent: /tools (every tool the model
// has, with its source, and every hook) and the custom commands of the
// workspace and the user (prompt files, agent/prompts). A custom command
// needs nothing here but its announcement: the prompt "/name args" goes
// to the host, which expands it.

// toolsCommand lists the model's tools and the hooks.
var toolsCommand = sdk.AvailableCommand{Name: "tools", Description: "List every tool the model has (built-in, MCP, language server) with its source, and every hook"}

// commandsFor are the commands announced to session id: the face's own,
// /tools, and the custom commands of its workspace.
func (a *Agent) commandsFor(ctx context.Context, id string) []sdk.AvailableCommand {
	out := append(append([]sdk.AvailableCommand(nil), slashCommands...), toolsCommand)
	s, err := a.session(sdk.SessionId(id))
	if err != nil {
		return out
	}
	ps, err := s.host.Prompts(ctx)
	if err != nil {
		a.log.Warn("custom commands not read", "error", err)
		return out
	}
	for _, p := range ps {
		if p.Name == toolsCommand.Name || isOwnCommand(p.Name) {
			continue // the face's commands come first
		}
		c := sdk.AvailableCommand{Name: p.Name, Description: p.Description}
		if p.ArgumentHint != "" {
			c.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: p.ArgumentHint}}
		}
		out = append(out, c)
	}
	return out
}

func isOwnCommand(name string) bool {
	for _, c := range slashCommands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// extensionSlash answers /tools; handled is false for any other name.
func (a *Agent) extensionSlash(ctx context.Context, s *acpSession, name string) (string, bool) {
	if name != toolsCommand.Name {
		return "", false
	}
	l, err := s.host.Tools(ctx)
	if err != nil {
		return "Tools not listed: " + err.Error(), true
	}
	return l.Markdown(), true
}
