package main

import (
	"context"
	"errors"
)

// runServe is filled in by the foundation issue.
func runServe(_ context.Context, _ stdio, _ []string) error {
	return errors.New("not implemented in this build")
}
