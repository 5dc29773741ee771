//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package grep

import (
	"fmt"
	"os"
)

func readFile(abs string, buf *[]byte) ([]byte, error) {
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("read %s: over the %d MiB grep limit", abs, maxFileBytes>>20)
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
