package main

import (
	"context"
	"errors"
)

// runFakeModel is filled in by the model-client issue.
func runFakeModel(_ context.Context, _ stdio, _ []string) error {
	return errors.New("not implemented in this build")
}
