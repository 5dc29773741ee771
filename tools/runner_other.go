//go:build !linux

package tools

import "os/exec"

// ProtectServer does nothing outside Linux.
func ProtectServer() error { return nil }

// BecomeSubreaper does nothing outside Linux.
func BecomeSubreaper() error { return nil }

func namespacesWork() bool                                   { return false }
func namespacesFailed()                                      {}
func namespaceRefused(err error) bool                        { return false }
func setProcAttr(cmd *exec.Cmd, supervised, ns, newNet bool) { setGroup(cmd) }
func sweepMarked(runID string) int                           { return 0 }
