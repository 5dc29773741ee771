package grep

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/agentls/agentls/internal/rawsys"
	"golang.org/x/sys/unix"
)

func openDirFD(dir string) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

func closeDirFD(fd int) { unix.Close(fd) }

// noOpenat2 is set once the kernel has said it has no openat2 (before
// Linux 5.6): reads then go through os.Root, which walks each component
// with O_NOFOLLOW.
var noOpenat2 atomic.Bool

// openBeneath opens rel (slash-separated, relative to r) for reading with
// one openat2 call that the kernel refuses to resolve outside r's folder
// (RESOLVE_BENEATH: no "..", no absolute or escaping symlink, no /proc
// magic link). Symlinks that stay inside are followed, as os.Root does.
// A named pipe must not block: O_NONBLOCK.
func openBeneath(r *Root, rel string) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		}
		for tries := 0; ; tries++ {
			fd, err := rawsys.Openat2(r.fd, rel, &how)
			switch {
			case err == nil:
				return fd, nil
			case err == unix.EINTR, err == unix.EAGAIN && tries < 16:
				// EAGAIN: a rename raced with the lookup; the kernel asks
				// for a retry rather than risk an escape.
				continue
			case err == unix.ENOSYS:
				noOpenat2.Store(true)
			default:
				return -1, err
			}
			break
		}
	}
	f, err := r.os.OpenFile(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return -1, pe.Err
		}
		return -1, err
	}
	defer f.Close()
	return unix.Dup(int(f.Fd()))
}

// fstatat is unix.Fstatat (following links) without its allocation, as
// openat2.
func fstatat(dirfd int, path string, st *unix.Stat_t) error {
	var b [512]byte
	if len(path) >= len(b) || strings.IndexByte(path, 0) >= 0 {
		return unix.Fstatat(dirfd, path, st, 0)
	}
	copy(b[:], path)
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// readFile reads file rel of r into *buf (grown as needed) with raw system
// calls: no *os.File, no poller registration, no allocation once the buffer
// is large enough.
//
// size is what the warm index knows the file's size to be, or -1. With a
// size, no fstat is made: the index trusts that the file has not changed
// (one that grew is read to its end). Without, the first read takes the
// file's first readHead bytes, and most source files end there: a regular
// file's read stops short only at its end (the page cache fills it whole;
// only a fatal signal cuts it), so neither an fstat nor the read of 0 bytes
// that would confirm the end is made (the fstat was an eighth of a cold
// search's system time). A file that fills the first read is measured
// with fstat, and its buffer grows once to its size (from big when large).
// The file was listed as a regular file; one swapped for another kind
// since fails: a folder at its first read, a named pipe (opened without
// blocking) when that read finds nothing, as an empty file is checked.
func readFile(r *Root, rel string, size int64, buf *[]byte, big *bigBuffer) ([]byte, error) {
	fd, err := openBeneath(r, rel)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer rawsys.Close(fd)
	if size >= 0 {
		return readAll(fd, int(size), buf, 0)
	}
	if cap(*buf) < readHead {
		*buf = make([]byte, readHead)
	}
	b := (*buf)[:readHead]
	m, err := readOnce(fd, b)
	if m == 0 && (err == nil || err == unix.EAGAIN) {
		// Nothing at all: an empty file (rare), or a named pipe.
		if _, err := regularSize(fd); err != nil {
			return nil, err
		}
		return b[:0], nil
	}
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if m < readHead || isBinary(b[:m]) {
		// The whole file; or binary, and read no further, as ripgrep
		// does not read it (isBinary looks at binaryHead bytes).
		return b[:m], nil
	}
	n, err := regularSize(fd)
	if err != nil {
		return nil, err
	}
	if big != nil && n > keptBuffer && int64(cap(*buf)) <= n {
		head := slices.Clone(b[:m]) // fit may unmap the buffer it is in
		big.fit(buf, n)
		*buf = append((*buf)[:0], head...)
	}
	return readAll(fd, int(n), buf, m)
}

// readOnce is one read, again when a signal interrupted it.
func readOnce(fd int, b []byte) (int, error) {
	for {
		m, err := rawsys.Read(fd, b)
		if err != unix.EINTR {
			return m, err
		}
	}
}

// regularSize is the size of fd, or an error when it is no regular file.
func regularSize(fd int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, errors.New("not a regular file")
	}
	return st.Size, nil
}

// readAll reads the rest of fd, which promises size bytes, into *buf, whose
// first n bytes were read already; of a binary file (isBinary of the first
// read, when n is 0) only that first read.
func readAll(fd, size int, buf *[]byte, n int) ([]byte, error) {
	if size > maxFileBytes {
		return nil, fmt.Errorf("%d bytes, over the %d MiB grep limit", size, maxFileBytes>>20)
	}
	if cap(*buf) < readHead {
		*buf = make([]byte, readHead)
	}
	b := (*buf)[:cap(*buf)]
	for {
		if n == len(b) {
			// Room for one more byte than the size promised: a file that
			// reports size 0 (procfs-like) or grows while it is read is
			// read to its end. Doubling: a worker meets ever larger files
			// as a search goes on, and growing to each one's size
			// allocated (and faulted in) about 1 MB per 1,000 files.
			if n > maxFileBytes {
				return nil, fmt.Errorf("over the %d MiB grep limit", maxFileBytes>>20)
			}
			nb := make([]byte, max(2*len(b), size+1))
			copy(nb, b[:n])
			*buf, b = nb, nb
		}
		end := len(b)
		if n == 0 {
			end = min(end, readHead)
		}
		m, err := rawsys.Read(fd, b[n:end])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		if m == 0 {
			break
		}
		if n == 0 && isBinary(b[:m]) {
			// A NUL in the head: binary whatever follows (isBinary reads
			// no further than binaryHead bytes), so the rest is not read,
			// as ripgrep does not read it.
			return b[:m], nil
		}
		n += m
		if n == size && size > 0 {
			break // what the size promised: no second read to learn it ended
		}
	}
	return b[:n], nil
}

// readHead is the first read of a file: enough for most source files
// whole, and for the binary check of the rest before they are read.
const readHead = 64 << 10

// statFile returns the stamp of file rel of r. It follows symlinks relative
// to r's handle; a stamp is only compared with stamps of content read
// through openBeneath, so a swapped path can at worst make grep read again.
func statFile(r *Root, rel string) (stamp, error) {
	var st unix.Stat_t
	for {
		err := fstatat(r.fd, rel, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return stamp{}, fmt.Errorf("stat: %w", err)
		}
		break
	}
	return stamp{size: st.Size, mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ino: st.Ino}, nil
}
