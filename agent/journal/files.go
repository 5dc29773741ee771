package journal

import (
	"context"
	"errors"

	"github.com/agentls/agentls/workspace"
)

// ErrNoStore is returned by Resume and Undo without a session store.
var ErrNoStore = errors.New("no session store configured")

// Files reads workspace files as the tools see them (an open buffer first,
// then the disk); *workspace.Workspace satisfies it. Resume uses it to see
// what changed while a task was interrupted, Undo to check and revert files.
type Files interface {
	ReadFile(ctx context.Context, p workspace.Path) (*workspace.File, error)
	Resolve(input string) (workspace.Path, error)
}
