package tools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentls/agentls/tools/sandbox"
)

// The test binary supervises commands as the agentls binary does: re-run
// with sandbox.Arg it becomes the supervisor and exits. Run with
// AGENTLS_TEST_SERVER_COMMAND set, it is a stand-in server: it becomes a
// subreaper, runs that command through Run and waits to be killed.
func init() {
	sandbox.Main()
	if c := os.Getenv("AGENTLS_TEST_SERVER_COMMAND"); c != "" {
		_ = BecomeSubreaper()
		if os.Getenv("AGENTLS_TEST_SERVER_NO_NAMESPACES") != "" {
			namespacesFailed() // as on kernels that refuse them
		}
		// The command environment is an allowlist: the pid goes in the
		// command line itself.
		c = strings.ReplaceAll(c, "$SERVER_PID", fmt.Sprint(os.Getpid()))
		res, err := Run(context.Background(), RunSpec{
			Argv: []string{"/bin/sh", "-c", c}, Dir: os.Getenv("AGENTLS_TEST_SERVER_DIR"),
			Stdout: os.Stdout, Stderr: os.Stderr, Timeout: time.Hour,
			Sandbox: SandboxOptions{Mode: os.Getenv("AGENTLS_TEST_SERVER_SANDBOX"), Roots: []string{os.Getenv("AGENTLS_TEST_SERVER_DIR")}},
		})
		fmt.Fprintln(os.Stderr, "command ended:", res, err)
		os.Exit(0)
	}
}
