package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Plan is the policy for a command run in the workspace roots under mode
// (WorkspaceWrite, the default, or Off), with network allowed or not, and
// the line that says which sandbox it runs under. Namespaces is left false:
// the runner sets it when the kernel lets it create them.
func Plan(mode string, roots []string, network bool) (Policy, string) {
	if mode == Off {
		return Policy{}, "off"
	}
	abi, err := KernelABI()
	if err != nil {
		return Policy{}, "none: " + err.Error()
	}
	p := Policy{Landlock: true, ABI: abi, Network: network}
	p.Writable = append(p.Writable, roots...)
	p.Writable = append(p.Writable, cacheDirs()...)
	p.WritableFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx"}
	for _, r := range roots {
		p.ReadOnly = append(p.ReadOnly, ProtectedPaths(r)...)
	}
	return p, p.Describe(mode)
}

var (
	cacheOnce sync.Once
	caches    []string
)

// cacheDirs are the folders toolchains write outside the workspace: the
// temporary folder, Go's build and module caches and GOPATH, ~/.cache and
// the npm and cargo caches.
func cacheDirs() []string {
	cacheOnce.Do(func() {
		caches = append(caches, os.TempDir())
		if home, err := os.UserHomeDir(); err == nil {
			caches = append(caches, filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), filepath.Join(home, ".cargo"))
		}
		if d, err := os.UserCacheDir(); err == nil {
			caches = append(caches, d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
		if err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				for _, d := range filepath.SplitList(strings.TrimSpace(l)) {
					if filepath.IsAbs(d) {
						caches = append(caches, d)
					}
				}
			}
		}
	})
	return caches
}
