//go:build !unix

package workspace

// openNonblock is 0 where named pipes cannot appear in a folder.
const openNonblock = 0

// pidAlive reports whether process pid exists; without a cheap check a
// temporary file is assumed to belong to a live process only if it is ours.
func pidAlive(pid int) bool { return false }
