//go:build !linux

package grep

import (
	"errors"
	"fmt"
	"io"
)

func openDirFD(string) (int, error) { return -1, nil }

func closeDirFD(int) {}

// readFile reads file rel of r through os.Root, which refuses to leave the
// folder (each component opened with O_NOFOLLOW where the system has it).
// size, the index's idea of the file's size, is not used here.
func readFile(r *Root, rel string, size int64, buf *[]byte, _ *bigBuffer) ([]byte, error) {
	f, err := r.os.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > maxFileBytes {
		return nil, fmt.Errorf("%d bytes, over the %d MiB grep limit", fi.Size(), maxFileBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("over the %d MiB grep limit", maxFileBytes>>20)
	}
	*buf = data
	return data, nil
}

func statFile(r *Root, rel string) (stamp, error) {
	fi, err := r.os.Stat(rel)
	if err != nil {
		return stamp{}, err
	}
	return stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, nil
}
