//go:build !linux

package tools

import "os/exec"

// BecomeSubreaper does nothing outside Linux.
func BecomeSubreaper() error { return nil }

func namespacesWork() bool               { return false }
func namespacesFailed()                  {}
func namespaceRefused(err error) bool    { return false }
func setProcAttr(cmd *exec.Cmd, ns bool) { setGroup(cmd) }
func sweepMarked(runID string) int       { return 0 }
