//go:build !linux

package grep

// lowerPriority does nothing outside Linux.
func lowerPriority() {}
