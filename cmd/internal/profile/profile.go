// Package profile writes the CPU and heap profiles a command was asked for
// (--profile.cpu, --profile.mem), as gopls's flags of the same names do:
// the way to see where a process's time and memory went, measured in the
// process the editor or the shell runs.
package profile

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// Start starts a CPU profile to cpu and arranges a heap profile to mem
// (each skipped when ""). stop ends them; its problems go to errw.
func Start(cpu, mem string) (stop func(errw io.Writer), err error) {
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
