//go:build !linux

package workspace

// linkFree is false where the kernel cannot answer it in one call:
// realPath walks.
func linkFree(string) bool { return false }
