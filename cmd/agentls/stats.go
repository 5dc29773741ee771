package main

import (
	"context"
	"errors"
)

// runStats is filled in by the sessions issue.
func runStats(_ context.Context, _ stdio, _ []string) error {
	return errors.New("not implemented in this build")
}
