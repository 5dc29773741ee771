package lsptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var mcpBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// MCPTestServer builds, once per test binary, the real MCP server of
// tools/mcp/testdata/mcpserver (made with the same Go SDK as agentls's
// client) and returns its path: in the user's cache folder
// (agentls-test/mcpserver, replaced by each build), outside /tmp, which
// the sandbox makes private to each program.
func MCPTestServer(t testing.TB) string {
	t.Helper()
	mcpBuild.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "..", "tools", "mcp", "testdata", "mcpserver")
		cache, err := os.UserCacheDir()
		if err != nil {
			mcpBuild.err = err
			return
		}
		_ = os.MkdirAll(cache, 0o755)
		dir := filepath.Join(cache, "agentls-test")
		if mcpBuild.err = os.MkdirAll(dir, 0o755); mcpBuild.err != nil {
			return
		}
		tmp, err := os.CreateTemp(dir, "mcpserver-*")
		if err != nil {
			mcpBuild.err = err
			return
		}
		tmp.Close()
		// Built beside, then renamed: test binaries running at once never
		// see half a file.
		cmd := exec.Command("go", "build", "-o", tmp.Name(), ".")
		cmd.Dir = src
		if mcpBuild.out, mcpBuild.err = cmd.CombinedOutput(); mcpBuild.err != nil {
			os.Remove(tmp.Name())
			return
		}
		mcpBuild.path = filepath.Join(dir, "mcpserver")
		mcpBuild.err = os.Rename(tmp.Name(), mcpBuild.path)
	})
	if mcpBuild.err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", mcpBuild.err, mcpBuild.out)
	}
	return mcpBuild.path
}
