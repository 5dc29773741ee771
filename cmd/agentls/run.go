package main

import (
	"context"
	"errors"
)

// runRun is filled in by the agent-loop issue.
func runRun(_ context.Context, _ stdio, _ []string) error {
	return errors.New("not implemented in this build")
}
