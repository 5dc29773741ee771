package grep

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/agentls/agentls/internal/rawsys"
	"golang.org/x/sys/unix"
)

func TestReadFileReadsTextWholeAndBinaryOnlyToItsHead(t *testing.T) {
	dir := t.TempDir()
	large := bytes.Repeat([]byte("some text line\n"), 20000) // 300 KB
	lateNUL := append(bytes.Repeat([]byte("x"), binaryHead+10), 0)
	cases := []struct {
		name    string
		content []byte
		want    int  // bytes readFile returns
		binary  bool // isBinary of what it returns
	}{
		{"small.txt", []byte("hello\n"), 6, false},
		{"empty.txt", nil, 0, false},
		{"big.txt", large, len(large), false},
		{"big.bin", append([]byte{0x7f, 'E', 'L', 'F', 0}, large...), readHead, true},
		{"small.bin", []byte{1, 0, 2}, 3, true},
		{"late-nul.txt", lateNUL, len(lateNUL), false},
		// Around the first read's size: a file of unknown size is read
		// until a read comes back short, never cut at a read's end.
		{"head-less-1.txt", bytes.Repeat([]byte("a"), readHead-1), readHead - 1, false},
		{"head.txt", bytes.Repeat([]byte("b"), readHead), readHead, false},
		{"head-plus-1.txt", bytes.Repeat([]byte("c"), readHead+1), readHead + 1, false},
		{"two-heads.txt", bytes.Repeat([]byte("d"), 2*readHead), 2 * readHead, false},
		// Larger than a worker keeps on the heap: read into a mapping.
		{"huge.txt", bytes.Repeat([]byte("e"), keptBuffer+readHead+7), keptBuffer + readHead + 7, false},
	}
	for _, c := range cases {
		if err := os.WriteFile(filepath.Join(dir, c.name), c.content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := testRoot(t, dir)
	var buf []byte
	var big bigBuffer
	defer big.release(&buf)
	forEachCallKind(t, func(t *testing.T) {
		for _, c := range cases {
			for _, size := range []int64{-1, int64(len(c.content))} { // unknown, and known from the index
				if size >= 0 {
					big.fit(&buf, size)
				}
				got, err := readFile(r, c.name, size, &buf, &big)
				if err != nil {
					t.Fatalf("%s (size %d): %v", c.name, size, err)
				}
				if len(got) != c.want || isBinary(got) != c.binary {
					t.Errorf("%s (size %d): read %d bytes (binary %v), want %d (binary %v)", c.name, size, len(got), isBinary(got), c.want, c.binary)
				}
				if !c.binary && !bytes.Equal(got, c.content) {
					t.Errorf("%s (size %d): the text read differs from the file", c.name, size)
				}
				if len(c.content) > keptBuffer && (big.c.words == nil || unsafe.SliceData(got) != (*byte)(unsafe.Pointer(unsafe.SliceData(big.c.words)))) {
					t.Errorf("%s (size %d): %d bytes read on the heap, not into the worker's mapping", c.name, size, len(got))
				}
			}
		}
	})
}

// TestReadFileOfAPathSwappedForAnotherKind: a listed file replaced by a
// named pipe or a folder fails at once: nothing hangs (no writer is waited
// for), and neither reads as an empty file.
func TestReadFileOfAPathSwappedForAnotherKind(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "pipe.go"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := testRoot(t, dir)
	var buf []byte
	forEachCallKind(t, func(t *testing.T) {
		if got, err := readFile(r, "pipe.go", -1, &buf, nil); err == nil {
			t.Errorf("named pipe: read %q, no error", got)
		}
		if got, err := readFile(r, "folder.go", -1, &buf, nil); err == nil {
			t.Errorf("folder: read %q, no error", got)
		}
	})
}

// forEachCallKind runs f with the scheduler's system calls (a server's)
// and with raw ones (rawsys.WithoutHandoff, the command line's).
func forEachCallKind(t *testing.T, f func(t *testing.T)) {
	for _, raw := range []bool{false, true} {
		t.Run(map[bool]string{false: "handoff", true: "raw"}[raw], func(t *testing.T) {
			defer rawsys.SetForTest(raw)()
			f(t)
		})
	}
}

// testRoot is the handle grep reads folder dir through, closed with the test.
func testRoot(t *testing.T, dir string) *Root {
	t.Helper()
	x := NewIndex(1 << 20)
	t.Cleanup(func() { x.Close() })
	r, err := x.Root(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
