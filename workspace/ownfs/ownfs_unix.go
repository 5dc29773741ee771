//go:build unix

package ownfs

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func noFollow(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
		return ErrLink
	}
	return err
}

func openDirAt(parent *os.File, name string, create bool, perm os.FileMode) (*os.File, error) {
	fd := int(parent.Fd())
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	for try := 0; ; try++ {
		nfd, err := unix.Openat(fd, name, flags, 0)
		if err == nil {
			return os.NewFile(uintptr(nfd), name), nil
		}
		if errors.Is(err, unix.ENOTDIR) {
			// A link (some systems say ENOTDIR for O_DIRECTORY on a link)
			// or a file.
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return nil, ErrLink
			}
			return nil, err
		}
		if !create || !errors.Is(err, unix.ENOENT) || try > 0 {
			return nil, noFollow(err)
		}
		if err := unix.Mkdirat(fd, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, err
		}
	}
}

func openFileAt(parent *os.File, name string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := unix.Openat(int(parent.Fd()), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
	if err != nil {
		return nil, noFollow(err)
	}
	// Reads and writes of a regular file do not block anyway; clear the
	// flag that only kept a named pipe from blocking the open.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

func renameAt(dir *os.File, oldName, newName string) error {
	return unix.Renameat(int(dir.Fd()), oldName, int(dir.Fd()), newName)
}

func renameAt2(od *os.File, oldName string, nd *os.File, newName string) error {
	return unix.Renameat(int(od.Fd()), oldName, int(nd.Fd()), newName)
}

func unlinkAt(dir *os.File, name string) error {
	err := unix.Unlinkat(int(dir.Fd()), name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if derr := unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR); derr == nil {
			return nil
		}
	}
	if errors.Is(err, unix.ENOENT) {
		return os.ErrNotExist
	}
	return err
}

func lstatAt(d *Dir, name string) (os.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.f.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, &os.PathError{Op: "lstat", Path: name, Err: os.ErrNotExist}
		}
		return nil, &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	return statInfo{name: name, st: st}, nil
}

func links(fi os.FileInfo) uint64 {
	switch s := fi.Sys().(type) {
	case *syscall.Stat_t:
		return uint64(s.Nlink)
	case *unix.Stat_t:
		return uint64(s.Nlink)
	}
	return 1
}

func owner(fi os.FileInfo) (int, bool) {
	switch s := fi.Sys().(type) {
	case *syscall.Stat_t:
		return int(s.Uid), true
	case *unix.Stat_t:
		return int(s.Uid), true
	}
	return 0, false
}

// statInfo is an os.FileInfo from fstatat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }
func (s statInfo) Mode() os.FileMode {
	m := os.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= os.ModeDir
	case unix.S_IFLNK:
		m |= os.ModeSymlink
	case unix.S_IFIFO:
		m |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= os.ModeSocket
	case unix.S_IFCHR:
		m |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		m |= os.ModeDevice
	}
	return m
}
