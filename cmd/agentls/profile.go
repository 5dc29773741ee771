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
// server (heap, stacks, runtime): the live heap of a 55,000-file workspace
// with its search filter built is about 90 MB, and without a limit the
// collector lets the heap grow to twice the live size before it runs, so
// the process's resident size peaked near 270 MB. Under the limit the
// collector runs earlier instead (its CPU share stays capped by the
// runtime), and the peak stays under the 150 MB the project promises with
// the binary's own pages beside it.
const serveMemoryLimit = 112 << 20

// limitMemory sets serveMemoryLimit, unless the user set GOMEMLIMIT, which
// the runtime has already applied and which wins.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveMemoryLimit)
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
