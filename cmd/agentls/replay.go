package main

import (
	"context"
	"errors"
)

// runReplay is filled in by the model-client issue.
func runReplay(_ context.Context, _ stdio, _ []string) error {
	return errors.New("not implemented in this build")
}
