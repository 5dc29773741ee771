//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package grep

import (
	"errors"
	"fmt"
	"syscall"
)

// readFile reads the file at abs into *buf (grown as needed) with raw
// system calls: no *os.File, no poller registration, no allocation once the
// buffer is large enough.
func readFile(abs string, buf *[]byte) ([]byte, error) {
	fd, err := open(abs)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	size := int(st.Size)
	if size > maxFileBytes {
		return nil, fmt.Errorf("%d bytes, over the %d MiB grep limit", size, maxFileBytes>>20)
	}
	// One extra byte tells a file that grew from one that did not.
	if cap(*buf) < size+1 {
		*buf = make([]byte, size+1+size/4)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for n < len(b) {
		m, err := syscall.Read(fd, b[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		if m == 0 {
			break
		}
		n += m
		if n > size {
			// It grew: read to the end with a larger buffer.
			if n == len(b) {
				if n > maxFileBytes {
					return nil, fmt.Errorf("over the %d MiB grep limit", maxFileBytes>>20)
				}
				nb := make([]byte, 2*len(b))
				copy(nb, b)
				*buf, b = nb, nb
			}
		}
	}
	return b[:n], nil
}

func open(abs string) (int, error) {
	for {
		fd, err := syscall.Open(abs, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0) // a named pipe must not block
		if err == syscall.EINTR {
			continue
		}
		return fd, err
	}
}

func statFile(abs string) (stamp, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Stat(abs, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return stamp{}, fmt.Errorf("stat: %w", err)
		}
		break
	}
	return stamp{size: st.Size, mtime: mtimeOf(&st), ino: uint64(st.Ino)}, nil
}
