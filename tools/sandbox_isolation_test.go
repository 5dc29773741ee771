package tools

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/sandbox"
)

// needNamespaces skips loudly where the kernel refuses the sandbox's
// namespaces (the result then says what is not isolated).
func needNamespaces(t *testing.T) {
	t.Helper()
	landlockABI(t)
	label, err := SandboxStatus(context.Background(), SandboxOptions{Roots: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(label, "no namespaces") || strings.Contains(label, "no mount namespace") {
		t.Skipf("THE NAMESPACES ARE NOT TESTED: commands run under %s", label)
	}
}

func needPerl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl to open sockets with")
	}
}

// TestSandboxLoopbackWorksInsideOnly: with the network off a command's own
// server on 127.0.0.1 answers it (a test's httptest), and a listener of
// the host's loopback does not.
func TestSandboxLoopbackWorksInsideOnly(t *testing.T) {
	needNamespaces(t)
	needPerl(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	line := fmt.Sprintf(`perl -MIO::Socket::INET -e '
my $l = IO::Socket::INET->new(LocalAddr => "127.0.0.1:0", Listen => 1) or die "listen: $!\n";
my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1:" . $l->sockport) or die "own server: $!\n";
print "OWN-SERVER-OK\n";
IO::Socket::INET->new(PeerAddr => "127.0.0.1:%s", Timeout => 2) and print "HOST-REACHED\n";
'`, port)
	res, _, text := runIn(t, "", false, line)
	if !strings.Contains(text, "OWN-SERVER-OK") || strings.Contains(text, "HOST-REACHED") {
		t.Errorf("%s:\n%s", res.Sandbox, text)
	}
}

// TestSandboxGitDirIsReadOnly: the whole git dir is read-only, whether
// .git is a folder or a gitdir: file, with the common dir it names; it
// cannot be renamed; a .git created where there was none is removed and
// the result says so.
func TestSandboxGitDirIsReadOnly(t *testing.T) {
	needNamespaces(t)
	res, dir, text := runIn(t, "", false, `echo x > .git/commondir && echo COMMONDIR-WRITTEN
mkdir -p .git/info && echo '* filter=x' > .git/info/attributes && echo ATTRIBUTES-WRITTEN
mv .git .git-old && echo RENAMED
true`)
	for _, bad := range []string{"COMMONDIR-WRITTEN", "ATTRIBUTES-WRITTEN", "RENAMED"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s (%s):\n%s", bad, res.Sandbox, text)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "config")); err != nil {
		t.Errorf(".git is gone: %v", err)
	}

	// A worktree: .git is a file naming a git dir elsewhere, whose
	// commondir names the main repository's.
	main := t.TempDir()
	wt := t.TempDir()
	gd := filepath.Join(main, ".git", "worktrees", "w")
	os.MkdirAll(gd, 0o755)
	os.WriteFile(filepath.Join(gd, "commondir"), []byte("../..\n"), 0o644)
	os.WriteFile(filepath.Join(main, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+gd+"\n"), 0o644)
	var out lockedOut
	r, err := Run(context.Background(), RunSpec{
		Argv: []string{"/bin/sh", "-c", fmt.Sprintf(`echo evil > .git && echo GITFILE-WRITTEN
echo x > %[1]s/HEAD && echo GITDIR-WRITTEN
echo '[core] fsmonitor = id' >> %[2]s/.git/config && echo COMMON-WRITTEN
true`, gd, main)}, Dir: wt, Stdout: &out, Stderr: &out, Timeout: time.Minute,
		Sandbox: SandboxOptions{Roots: []string{wt, main}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"GITFILE-WRITTEN", "GITDIR-WRITTEN", "COMMON-WRITTEN"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("%s (%s):\n%s", bad, r.Sandbox, out.String())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(wt, ".git")); !strings.HasPrefix(string(b), "gitdir:") {
		t.Errorf(".git file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(gd, "HEAD")); err == nil {
		t.Error("the worktree's git dir was written")
	}

	// No .git: one the command makes is removed after it, and said.
	fresh := t.TempDir()
	out = lockedOut{}
	r, err = Run(context.Background(), RunSpec{
		Argv: []string{"/bin/sh", "-c", "mkdir .git && echo '[core]' > .git/config"}, Dir: fresh, Stdout: &out, Stderr: &out, Timeout: time.Minute,
		Sandbox: SandboxOptions{Roots: []string{fresh}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fresh, ".git")); err == nil {
		t.Error("the .git the command created is still there")
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "created "+filepath.Join(fresh, ".git")) {
		t.Errorf("Notes = %q", r.Notes)
	}
}

// TestSandboxHidesTheSessionAndKeepsWorkspaceUnderTmp: /tmp and /run are
// the command's own; the workspace under /tmp stays at its path.
func TestSandboxHidesTheSessionAndKeepsWorkspaceUnderTmp(t *testing.T) {
	needNamespaces(t)
	host, err := os.MkdirTemp("/tmp", "agentls-host-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(host)
	os.WriteFile(filepath.Join(host, "secret"), []byte("x"), 0o644)
	shm := "/dev/shm/" + randHex(6)
	defer os.Remove(shm)
	res, dir, text := runIn(t, "", false, fmt.Sprintf(`ls %s/secret 2>/dev/null && echo HOST-TMP-VISIBLE; pwd; touch in-ws && echo WS-OK; touch %s && echo SHM-OK`, host, shm))
	if strings.Contains(text, "HOST-TMP-VISIBLE") || !strings.Contains(text, dir) || !strings.Contains(text, "WS-OK") || !strings.Contains(text, "SHM-OK") {
		t.Errorf("%s:\n%s", res.Sandbox, text)
	}
	if _, err := os.Stat(shm); err == nil {
		t.Errorf("%s appeared in the host's /dev/shm", shm)
	}
}

// TestSandboxFileSizeLimit: a write past the file size limit kills the
// command with SIGXFSZ and the result says which limit.
func TestSandboxFileSizeLimit(t *testing.T) {
	landlockABI(t)
	testLimits.Store(&sandbox.Limits{FileBytes: 1 << 20})
	defer testLimits.Store(nil)
	res, _, _ := runIn(t, "", false, "exec head -c 3000000 /dev/zero > big")
	if res.Signal != "SIGXFSZ" || len(res.Notes) != 1 || res.Notes[0] != "file size limit (1 MiB) hit" {
		t.Errorf("Signal %q, Notes %q", res.Signal, res.Notes)
	}
}

// TestSandboxWithoutNamespacesRefusesInetSockets: where namespaces are
// refused, a seccomp filter refuses UDP (which Landlock does not cover)
// and the label says what is not isolated.
func TestSandboxWithoutNamespacesRefusesInetSockets(t *testing.T) {
	landlockABI(t)
	needPerl(t)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _, err := pc.ReadFrom(b)
		if err == nil {
			got <- string(b[:n])
		}
	}()
	_, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	line := fmt.Sprintf(`perl -MSocket -e 'socket(S, PF_INET, SOCK_DGRAM, 17) or die "socket: $!\n"; send(S, "udp", 0, pack_sockaddr_in(%s, inet_aton("127.0.0.1"))) or die "send: $!\n"; print "SENT\n"'; echo PROBE-DONE`, port)
	exe, _ := os.Executable()
	srv := exec.Command(exe, "-test.run=^$")
	srv.Env = append(os.Environ(), "AGENTLS_TEST_SERVER_COMMAND="+line, "AGENTLS_TEST_SERVER_DIR="+t.TempDir(), "AGENTLS_TEST_SERVER_SANDBOX=", "AGENTLS_TEST_SERVER_NO_NAMESPACES=1")
	out, err := srv.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PROBE-DONE") {
		t.Fatalf("%v\n%s", err, out)
	}
	select {
	case s := <-got:
		t.Errorf("UDP left the sandbox without namespaces: %q\n%s", s, out)
	case <-time.After(200 * time.Millisecond):
	}
	if strings.Contains(string(out), "SENT") || !strings.Contains(string(out), "seccomp") || !strings.Contains(string(out), "not isolated") {
		t.Errorf("output:\n%s", out)
	}
}

// TestLookPathTrustsOnlyFoldersTheWorkspaceCannotWrite: relative PATH
// entries and folders inside the roots are skipped; the answer is cached.
func TestLookPathTrustsOnlyFoldersTheWorkspaceCannotWrite(t *testing.T) {
	root := t.TempDir()
	trusted := t.TempDir()
	for _, d := range []string{filepath.Join(root, "bin"), trusted} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "agentls-probe-tool"), []byte("#!/bin/sh\n"), 0o755)
	}
	t.Setenv("PATH", strings.Join([]string{".", "bin", filepath.Join(root, "bin"), trusted}, string(os.PathListSeparator)))
	t.Chdir(root)
	got, err := LookPath("agentls-probe-tool", []string{root})
	if err != nil || got != filepath.Join(trusted, "agentls-probe-tool") {
		t.Errorf("LookPath = %q, %v; want the trusted folder's", got, err)
	}
	os.Remove(filepath.Join(trusted, "agentls-probe-tool"))
	if again, _ := LookPath("agentls-probe-tool", []string{root}); again != got {
		t.Errorf("not cached: %q", again)
	}
	if _, err := LookPath("agentls-no-such-tool", []string{root}); err == nil {
		t.Error("a missing program was found")
	}
	if p, _ := LookPath("./x", nil); p != "./x" {
		t.Errorf("a path with a slash is kept: %q", p)
	}
}

// TestCacheDirsAreWhatBuildsWrite: GOPATH, ~/.cargo and ~/.cache are not
// writable wholesale, only their caches; their bin folders are toolchain bins.
func TestCacheDirsAreWhatBuildsWrite(t *testing.T) {
	env := map[string]string{"HOME": "/h", "GOPATH": "/g", "TMPDIR": "/t"}
	caches := sandbox.CacheDirs(func(k string) string { return env[k] })
	for _, want := range []string{"/t", "/h/.cache/go-build", "/h/.cache/pip", "/g/pkg/mod", "/g/pkg/sumdb", "/h/.npm", "/h/.cargo/registry", "/h/.cargo/git"} {
		if !slicesContains(caches, want) {
			t.Errorf("%s missing from %q", want, caches)
		}
	}
	for _, bad := range []string{"/g", "/h/.cargo", "/g/bin", "/h/.cargo/bin", "/h", "/h/.cache"} {
		if slicesContains(caches, bad) {
			t.Errorf("%s is writable: %q", bad, caches)
		}
	}
	bins := sandbox.ToolchainBins(func(k string) string { return env[k] })
	for _, want := range []string{"/g/bin", "/h/.cargo/bin", "/h/.local/bin"} {
		if !slicesContains(bins, want) {
			t.Errorf("%s missing from %q", want, bins)
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestCommandCannotWriteTheStatusPipe: the supervisor's status pipe (fd
// 3) is not open in the command, so it cannot forge how it ended.
func TestCommandCannotWriteTheStatusPipe(t *testing.T) {
	landlockABI(t)
	res, _, text := runIn(t, "", false, `echo '{"exit":0}' >&3 && echo FORGED; exit 7`)
	if strings.Contains(text, "FORGED") || res.ExitCode != 7 {
		t.Errorf("exit %d:\n%s", res.ExitCode, text)
	}
}

// TestCommandHasNoControllingTerminal: a stand-in server (this test
// binary) running in a terminal starts a command; the command cannot open
// /dev/tty, so it cannot push input into the user's shell (TIOCSTI).
func TestCommandHasNoControllingTerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give the server a terminal")
	}
	for _, mode := range []string{"", sandbox.Off} {
		exe, _ := os.Executable()
		line := `test -t 1; ( exec 9<>/dev/tty ) 2>/dev/null && echo TTY-OPENED; echo PROBE-DONE`
		srv := exec.Command("script", "-qec", exe+" -test.run=^$", "/dev/null")
		srv.Env = append(os.Environ(), "AGENTLS_TEST_SERVER_COMMAND="+line, "AGENTLS_TEST_SERVER_DIR="+t.TempDir(), "AGENTLS_TEST_SERVER_SANDBOX="+mode)
		out, err := srv.CombinedOutput()
		if !strings.Contains(string(out), "PROBE-DONE") {
			t.Fatalf("sandbox %q: %v\n%s", mode, err, out)
		}
		if strings.Contains(string(out), "TTY-OPENED") {
			t.Errorf("sandbox %q: the command opened the server's terminal:\n%s", mode, out)
		}
	}
}
