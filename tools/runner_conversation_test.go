package tools

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// A long-lived program that answers requests on its standard input (an
// MCP server over stdio) runs through the one launcher, in the sandbox: the
// caller writes a line, reads the answer, writes again, and the program
// ends when its input closes. The server's own env reaches it even with a
// name CommandEnv would drop; the server's secrets still do not.
func TestRunStdinConversation(t *testing.T) {
	dir := t.TempDir()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTLS_STDIN_TEST_TOKEN", "server-secret-value")
	type ended struct {
		res RunResult
		err error
	}
	done := make(chan ended, 1)
	go func() {
		// Prints its env once, then echoes every line it reads, upper-cased.
		script := `echo "token=$GITHUB_TOKEN server=$AGENTLS_STDIN_TEST_TOKEN"; while read -r l; do echo "$l" | tr a-z A-Z; done`
		res, err := Run(context.Background(), RunSpec{
			Argv: []string{"sh", "-c", script}, Dir: dir,
			ExtraEnv: []string{"GITHUB_TOKEN=from-settings"},
			Stdin:    inR, Stdout: outW, Timeout: time.Minute,
			Sandbox: SandboxOptions{Roots: []string{dir}},
		})
		inR.Close()
		outW.Close()
		done <- ended{res, err}
	}()
	rd := bufio.NewReader(outR)
	line := func() string {
		t.Helper()
		s, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the program's answer: %v", err)
		}
		return strings.TrimSpace(s)
	}
	if got, want := line(), "token=from-settings server="; got != want {
		t.Errorf("environment line = %q; want %q", got, want)
	}
	for _, w := range []string{"first request", "second request"} {
		fmt.Fprintln(inW, w)
		if got, want := line(), strings.ToUpper(w); got != want {
			t.Errorf("answer to %q = %q; want %q", w, got, want)
		}
	}
	inW.Close()
	select {
	case e := <-done:
		if e.err != nil || e.res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v; want exit 0 once its input closed", e.res, e.err)
		}
		if !strings.HasPrefix(e.res.Sandbox, "landlock") && !strings.HasPrefix(e.res.Sandbox, "none") {
			t.Errorf("Sandbox = %q", e.res.Sandbox)
		}
		t.Logf("sandbox: %s", e.res.Sandbox)
	case <-time.After(30 * time.Second):
		t.Fatal("the program did not end after its input closed")
	}
}
