package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
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

// oneShotMemoryLimit is where the collector of a one-shot command
// (`agentls tool`) starts: below it the process never collects. Such a
// process lives a fraction of a second and allocates a few megabytes, yet
// the collector's default goal (4 MB at the start) ran three or four
// cycles in a grep of GOROOT/src, each stopping the world for up to 6 ms
// while the search's threads came to a stop: 7% of its CPU and, on a
// loaded machine, a quarter of its time.
const oneShotMemoryLimit = 256 << 20

// collectLate turns the collector off until the Go memory reaches
// oneShotMemoryLimit, unless the user set GOGC or GOMEMLIMIT (the runtime
// has applied them, and they win).
func collectLate() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(oneShotMemoryLimit)
	}
}

// startProfiles starts a CPU profile to cpu and arranges a heap profile to
// mem (each skipped when ""), as gopls's -profile.cpu and -profile.mem do:
// the way to see where a session's time and memory went, measured in the
// process the editor runs. stop ends them; its problems go to errw.
func startProfiles(cpu, mem string) (stop func(errw io.Writer), err error) {
	var cpuFile *os.File
	if cpu != "" {
		if cpuFile, err = os.Create(cpu); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			cpuFile.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	return func(errw io.Writer) {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				fmt.Fprintf(errw, "agentls: cpu profile: %v\n", err)
			}
		}
		if mem == "" {
			return
		}
		f, err := os.Create(mem)
		if err == nil {
			runtime.GC()
			err = pprof.Lookup("heap").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(errw, "agentls: heap profile: %v\n", err)
		}
	}, nil
}
