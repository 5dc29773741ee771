package rawsys

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCallsAnswerAsXSysDoesEitherWay: with the scheduler's calls and with
// raw ones, Open, Fstat, Read, Getdents, Openat2 and Close give what x/sys
// gives, for a path on the stack and for one too long for it, and report
// errors as errnos (Openat2 refusing a path that leaves its folder).
func TestCallsAnswerAsXSysDoesEitherWay(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("d", 200), strings.Repeat("e", 200), strings.Repeat("f", 200))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		t.Run(map[bool]string{false: "handoff", true: "raw"}[raw], func(t *testing.T) {
			defer SetForTest(raw)()
			if Raw() != raw {
				t.Fatalf("Raw() = %v", Raw())
			}
			for _, d := range []string{dir, long} {
				file := filepath.Join(d, "a.txt")
				if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
					t.Fatal(err)
				}
				fd, err := Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					t.Fatalf("Open(%d-byte path): %v", len(file), err)
				}
				var st unix.Stat_t
				if err := Fstat(fd, &st); err != nil || st.Size != 5 {
					t.Errorf("Fstat: size %d, %v", st.Size, err)
				}
				b := make([]byte, 16)
				if n, err := Read(fd, b); err != nil || string(b[:n]) != "hello" {
					t.Errorf("Read: %q, %v", b[:n], err)
				}
				if n, err := Read(fd, b); err != nil || n != 0 {
					t.Errorf("Read at the end: %d, %v", n, err)
				}
				if err := Close(fd); err != nil {
					t.Errorf("Close: %v", err)
				}
				if err := Close(fd); !errors.Is(err, unix.EBADF) {
					t.Errorf("Close twice: %v, want EBADF", err)
				}
				dfd, err := Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				if n, err := Getdents(dfd, make([]byte, 4096)); err != nil || n == 0 {
					t.Errorf("Getdents: %d, %v", n, err)
				}
				how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH}
				if fd, err := Openat2(dfd, "a.txt", &how); err != nil {
					t.Errorf("Openat2 a.txt: %v", err)
				} else {
					Close(fd)
				}
				if _, err := Openat2(dfd, "../a.txt", &how); !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.ENOSYS) {
					t.Errorf("Openat2 ../a.txt beneath its folder: %v, want EXDEV", err)
				}
				Close(dfd)
			}
			if _, err := Open(filepath.Join(dir, "missing"), unix.O_RDONLY, 0); !errors.Is(err, unix.ENOENT) {
				t.Errorf("Open of a missing file: %v, want ENOENT", err)
			}
		})
	}
}
