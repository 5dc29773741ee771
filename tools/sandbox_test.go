package tools

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/sandbox"
)

// landlockABI skips loudly when the kernel has no Landlock: the sandbox
// cannot be tested there (commands then run under approvals alone, and the
// result says so).
func landlockABI(t *testing.T) int {
	t.Helper()
	abi, err := sandbox.KernelABI()
	if err != nil {
		t.Skipf("THE SANDBOX IS NOT TESTED: %v", err)
	}
	return abi
}

// runIn runs line with sh in a fresh workspace under mode and returns the
// result and the workspace folder.
func runIn(t *testing.T, mode string, network bool, line string) (RunResult, string, string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{".agentls", ".git/hooks"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, ".agentls", "settings.json"), []byte(`{"allowCommands":[]}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644)
	var out lockedOut
	res, err := Run(context.Background(), RunSpec{
		Argv: []string{"/bin/sh", "-c", line}, Dir: dir, Stdout: &out, Stderr: &out, Timeout: time.Minute,
		Sandbox: SandboxOptions{Mode: mode, Network: network, Roots: []string{dir}},
	})
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return res, dir, out.String()
}

// outside is a folder outside every writable place of the sandbox.
func outside(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "agentls-outside-")
	if err != nil {
		d, err = os.MkdirTemp(filepath.Join(os.Getenv("HOME")), ".agentls-outside-")
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(d, os.TempDir()) {
		t.Fatalf("%s is inside the temporary folder", d)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestSandboxWritesOnlyInTheWorkspaceAndCaches(t *testing.T) {
	abi := landlockABI(t)
	out := outside(t)
	line := fmt.Sprintf(`touch in-workspace && echo ws-ok
touch %s/escaped && echo OUTSIDE-WRITTEN
f=$(mktemp) && echo tmp-ok
echo '{"allowCommands":["sh"]}' > .agentls/settings.json && echo SETTINGS-WRITTEN
rm -f .agentls/settings.json && echo SETTINGS-REMOVED
touch .agentls/new && echo STATE-WRITTEN
echo 'id' > .git/hooks/pre-commit && echo HOOK-WRITTEN
echo '[core] fsmonitor = id' >> .git/config && echo GITCONFIG-WRITTEN
mkdir sub && touch sub/x && echo sub-ok
true`, out)
	res, dir, text := runIn(t, "", false, line)
	if !strings.HasPrefix(res.Sandbox, "landlock (workspace-write") || !strings.Contains(res.Sandbox, fmt.Sprintf("ABI %d", abi)) {
		t.Errorf("Sandbox = %q", res.Sandbox)
	}
	if os.Getuid() == 0 {
		// A root server's commands lose the capabilities Landlock does not
		// cover: bit 16 (CAP_SYS_MODULE) and 21 (CAP_SYS_ADMIN) of CapBnd.
		_, _, caps := runIn(t, "", false, "grep CapBnd /proc/self/status")
		var bnd uint64
		fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(caps), "CapBnd:")), "%x", &bnd)
		if bnd == 0 || bnd&(1<<16) != 0 || bnd&(1<<21) != 0 {
			t.Errorf("sandboxed root keeps CAP_SYS_MODULE or CAP_SYS_ADMIN: %q", caps)
		}
	}
	for _, ok := range []string{"ws-ok", "tmp-ok", "sub-ok"} {
		if !strings.Contains(text, ok) {
			t.Errorf("%s missing: a write the sandbox allows failed:\n%s", ok, text)
		}
	}
	for _, bad := range []string{"OUTSIDE-WRITTEN", "SETTINGS-WRITTEN", "SETTINGS-REMOVED", "STATE-WRITTEN", "HOOK-WRITTEN", "GITCONFIG-WRITTEN"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s: the sandbox let it through:\n%s", bad, text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".agentls", "settings.json")); string(b) != `{"allowCommands":[]}`+"\n" {
		t.Errorf("settings.json changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(out, "escaped")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	// Off: the same writes go through (the approval is then the only gate).
	res, _, text = runIn(t, sandbox.Off, false, fmt.Sprintf("touch %s/escaped && echo OUTSIDE-WRITTEN", out))
	if res.Sandbox != "off" || !strings.Contains(text, "OUTSIDE-WRITTEN") {
		t.Errorf("sandbox off: %q %s", res.Sandbox, text)
	}
}

// TestSandboxedCommandCannotReadTheServerEnvironment: a stand-in server
// (this test binary, see init) started with the API key in its
// environment runs a command that tries to read the key through /proc:
// the server's environ, its parent's, and every environ it can see.
func TestSandboxedCommandCannotReadTheServerEnvironment(t *testing.T) {
	landlockABI(t)
	const secret = "sk-server-secret-0123456789"
	line := `cat /proc/$SERVER_PID/environ; cat /proc/$PPID/environ; for f in /proc/[0-9]*/environ; do cat $f; done; env; echo PROBE-DONE`
	for _, mode := range []string{"", sandbox.Off} {
		exe, _ := os.Executable()
		srv := exec.Command(exe, "-test.run=^$")
		srv.Env = append(os.Environ(), "OPENAI_API_KEY="+secret, "AGENTLS_TEST_SERVER_COMMAND="+line, "AGENTLS_TEST_SERVER_DIR="+t.TempDir(), "AGENTLS_TEST_SERVER_SANDBOX="+mode)
		out, err := srv.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PROBE-DONE") {
			t.Fatalf("sandbox %q: %v\n%s", mode, err, out)
		}
		if strings.Contains(string(out), secret) {
			t.Errorf("sandbox %q: the command read the server's key through /proc", mode)
		}
	}
}

func TestSandboxNetworkOffUnlessAllowed(t *testing.T) {
	if landlockABI(t) < 4 {
		t.Skip("THE NETWORK RULE IS NOT TESTED: Landlock ABI < 4 cannot restrict TCP")
	}
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("THE NETWORK RULE IS NOT TESTED: no perl to connect with")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	line := fmt.Sprintf(`perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => "%s") or die "connect: $!\n"; print "CONNECTED\n"'`, ln.Addr())
	res, _, text := runIn(t, "", false, line)
	if strings.Contains(text, "CONNECTED") || !strings.Contains(res.Sandbox, "no network") {
		t.Errorf("network off: %q\n%s", res.Sandbox, text)
	}
	res, _, text = runIn(t, "", true, line)
	if !strings.Contains(text, "CONNECTED") || !strings.Contains(res.Sandbox, "network allowed") {
		t.Errorf("network allowed: %q\n%s", res.Sandbox, text)
	}
}

// TestNoSurvivorsAfterTheServerIsKilled: a stand-in server (this test
// binary, see init) runs a command that starts children in new sessions
// and process groups; SIGKILL of the server leaves none of them running.
func TestNoSurvivorsAfterTheServerIsKilled(t *testing.T) {
	for _, mode := range []string{"", sandbox.Off, "no-namespaces"} {
		t.Run("sandbox="+mode, func(t *testing.T) {
			tag := sleepTag()
			extra := "AGENTLS_TEST_SERVER_NO_NAMESPACES="
			if mode == "no-namespaces" {
				mode, extra = "", extra+"1"
			}
			exe, _ := os.Executable()
			srv := exec.Command(exe, "-test.run=^$")
			srv.Env = append(os.Environ(), "AGENTLS_TEST_SERVER_COMMAND="+escapers(tag), "AGENTLS_TEST_SERVER_DIR="+t.TempDir(), "AGENTLS_TEST_SERVER_SANDBOX="+mode, extra)
			srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not in the test's group
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			waitStarted(t, tag, 4)
			if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			srv.Wait()
			waitNoSurvivors(t, tag)
		})
	}
}

// lockedOut collects both output streams.
type lockedOut struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedOut) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedOut) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestSandboxStatusSaysWhatCommandsRunUnder(t *testing.T) {
	abi := landlockABI(t)
	got, err := SandboxStatus(context.Background(), SandboxOptions{Roots: []string{t.TempDir()}})
	if err != nil || got != fmt.Sprintf("landlock (workspace-write; ABI %d; no network)", abi) {
		t.Errorf("SandboxStatus = %q, %v", got, err)
	}
	if got, err := SandboxStatus(context.Background(), SandboxOptions{Mode: sandbox.Off}); err != nil || got != "off" {
		t.Errorf("SandboxStatus(off) = %q, %v", got, err)
	}
}
