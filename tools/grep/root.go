package grep

import (
	"fmt"
	"os"
)

// Root is an open handle on one workspace folder. Every file grep reads is
// opened beneath it, resolved by the kernel relative to this handle, so a
// folder or file swapped for a symlink that leads outside (even between a
// check and the open) cannot make grep read outside the folder.
type Root struct {
	dir string
	os  *os.Root // the portable handle; also the fallback where openat2 is missing
	fd  int      // Linux: an O_PATH handle on dir for openat2; -1 elsewhere
}

// OpenRoot opens dir as a Root.
func OpenRoot(dir string) (*Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("grep: open root: %w", err)
	}
	fd, err := openDirFD(dir)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("grep: open root: %w", err)
	}
	return &Root{dir: dir, os: r, fd: fd}, nil
}

// Dir is the folder the Root was opened on.
func (r *Root) Dir() string { return r.dir }

// Close releases the handle.
func (r *Root) Close() error {
	closeDirFD(r.fd)
	return r.os.Close()
}
