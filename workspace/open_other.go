//go:build !unix

package workspace

// openNonblock is 0 where named pipes cannot appear in a folder.
const openNonblock = 0
