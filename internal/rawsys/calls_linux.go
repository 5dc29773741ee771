package rawsys

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

func syscall3(trap, a1, a2, a3 uintptr) (uintptr, unix.Errno) {
	if raw.Load() {
		r, _, e := unix.RawSyscall(trap, a1, a2, a3)
		return r, e
	}
	r, _, e := unix.Syscall(trap, a1, a2, a3)
	return r, e
}

func syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, unix.Errno) {
	if raw.Load() {
		r, _, e := unix.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
		return r, e
	}
	r, _, e := unix.Syscall6(trap, a1, a2, a3, a4, a5, a6)
	return r, e
}

// pathMax is the longest path copied to the stack; longer ones go through
// x/sys, which allocates their copy.
const pathMax = 512

// Openat2 is unix.Openat2 without its allocation: the path is copied to a
// buffer on the stack (x/sys allocates one per call, a few MB per search
// of a large tree).
func Openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	var b [pathMax]byte
	if len(path) >= len(b) || strings.IndexByte(path, 0) >= 0 {
		return unix.Openat2(dirfd, path, how)
	}
	copy(b[:], path)
	fd, errno := syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(how)), unsafe.Sizeof(*how), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// Open is unix.Open, its path on the stack as Openat2's.
func Open(path string, flags int, mode uint32) (int, error) {
	var b [pathMax]byte
	if len(path) >= len(b) || strings.IndexByte(path, 0) >= 0 {
		return unix.Open(path, flags, mode)
	}
	copy(b[:], path)
	cwd := unix.AT_FDCWD
	fd, errno := syscall6(unix.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(&b[0])), uintptr(flags|unix.O_LARGEFILE), uintptr(mode), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// Read is unix.Read.
func Read(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return unix.Read(fd, b)
	}
	n, errno := syscall3(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Getdents is unix.Getdents.
func Getdents(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return unix.Getdents(fd, b)
	}
	n, errno := syscall3(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Fstat is unix.Fstat.
func Fstat(fd int, st *unix.Stat_t) error {
	if _, errno := syscall3(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0); errno != 0 {
		return errno
	}
	return nil
}

// Close is unix.Close.
func Close(fd int) error {
	if _, errno := syscall3(unix.SYS_CLOSE, uintptr(fd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}
