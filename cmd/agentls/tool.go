package main

import (
	"context"
	"errors"
)

// runTool is filled in by the tools issue.
func runTool(_ context.Context, _ stdio, _ []string) error {
	return errors.New("not implemented in this build")
}
