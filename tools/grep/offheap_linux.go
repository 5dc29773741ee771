package grep

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = os.Getpagesize()

// mapChunk maps a chunk of at least n words of private anonymous memory,
// outside the Go heap (zeroed by the kernel, resident only once written).
// Where the kernel refuses, the chunk is an ordinary slice. With populate
// the pages are made resident at once, for a buffer that is about to be
// written whole (a large file read into it): one call instead of a fault
// per page (a grep of GOROOT/src faulted 3,800-4,400 times, 2,600 with
// its read buffers populated; perf stat).
func mapChunk(n int, populate bool) chunk {
	size := (n*8 + pageSize - 1) &^ (pageSize - 1)
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if populate {
		flags |= unix.MAP_POPULATE
	}
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return chunk{words: make([]uint64, n)}
	}
	return chunk{words: unsafe.Slice((*uint64)(p), size/8), mapped: true}
}

// unmapChunk gives a mapped chunk back to the system. Only chunkMem calls
// it, under its invariant.
func unmapChunk(c chunk) {
	_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(c.words)), uintptr(len(c.words)*8))
}
