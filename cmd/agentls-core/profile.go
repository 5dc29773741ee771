package main

import (
	"os"
	"runtime/debug"
)

// serveMemoryLimit is the soft limit on the Go memory of a long-lived
// server (heap, stacks, runtime). Without a limit the collector lets the
// heap grow to twice its live size before it runs. The search filter's bit
// sets, most of a server's memory, are not part of it: on Linux they are
// mapped outside the Go heap (tools/grep), so neither the collector's goal
// nor this limit counts them. The promise is a peak resident size under
// 150 MB on a 55,000-file workspace, which holds the binary's own pages
// (about 33 MB resident), the filter (about 48 MB mapped) and the Go
// memory: 56 MiB leaves the Go memory twice its live heap (about 26 MB
// once the filter is built) and keeps the peak near 143 MB, with room for
// a larger tree's filter. A limit closer to the live heap makes the
// collector run nearly without pause and its assists land on the
// editor's requests, which is why the filter left the heap.
const serveMemoryLimit = 56 << 20

// limitMemory sets serveMemoryLimit, unless the user set GOMEMLIMIT, which
// the runtime has already applied and which wins.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}
