package workspace

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once the kernel has said it has no openat2 (before
// Linux 5.6): realPath then always walks.
var noOpenat2 atomic.Bool

// linkFree reports whether no component of the clean absolute path p is a
// symbolic link and p exists: one openat2 that refuses to follow any link
// (RESOLVE_NO_SYMLINKS) answers what realPath's walk would learn with one
// lstat per component. Every grep result and every resolve asks it, and
// almost every path of a project has no link in it. false says only that
// the walk must decide.
func linkFree(p string) bool {
	if noOpenat2.Load() {
		return false
	}
	how := unix.OpenHow{
		// No O_NOFOLLOW: with it a link as the last component would be
		// opened itself rather than refused.
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
		switch err {
		case nil:
			unix.Close(fd)
			return true
		case unix.EINTR, unix.EAGAIN:
			continue
		case unix.ENOSYS:
			noOpenat2.Store(true)
		}
		return false
	}
}
