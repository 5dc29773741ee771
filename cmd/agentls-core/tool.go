package main

import (
	"context"
	"errors"

	"github.com/agentls/agentls/cmd/internal/toolcmd"
	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// runTool runs one tool and prints what the model would read (package
// toolcmd), the language tools included, over agentls's own language
// servers (started only when one of them runs), as `agentls run` and ACP
// sessions have them.
func runTool(ctx context.Context, io stdio, args []string) error {
	err := toolcmd.Run(ctx, io.in, io.out, io.err, args, toolcmd.Options{
		Extra: func(ws *workspace.Workspace) ([]tools.Tool, func()) {
			pool := langserver.NewPool(0)
			pool.Configure(ws.Roots(), nil, "")
			return langserver.Tools(langserver.Env{Workspace: ws, Source: pool}), func() { pool.Close() }
		},
	})
	var code toolcmd.Exit
	if errors.As(err, &code) {
		return &exitError{code: int(code)}
	}
	return err
}
