//go:build unix

package gitstate

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A command may plant a FIFO where HEAD was: reading it must not block.
func TestReadFilesDoesNotBlockOnAFIFO(t *testing.T) {
	dir := gitRepo(t)
	head := filepath.Join(dir, ".git", "HEAD")
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(head, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if st := ReadFiles(dir); st.Repo {
		t.Errorf("ReadFiles with a FIFO as HEAD = %+v; want no state", st)
	}
}
