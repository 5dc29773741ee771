//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package grep

import (
	"errors"
	"fmt"
	"os"
)

func readFile(abs string, buf *[]byte) ([]byte, error) {
	if fi, err := os.Stat(abs); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("over the %d MiB grep limit", maxFileBytes>>20)
	}
	return data, nil
}

func statFile(abs string) (stamp, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return stamp{}, err
	}
	return stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, nil
}
