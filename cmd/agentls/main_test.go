package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var built struct {
	once sync.Once
	dir  string
	out  []byte
	err  error
}

// buildBoth builds agentls and agentls-core into one folder, static, as
// make install does, and returns the folder.
func buildBoth(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "agentls-front-")
		if built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version=front-test", "-o", built.dir+string(filepath.Separator), ".", "../agentls-core")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// run runs bin with args in a fresh home and returns its exit code and
// output.
func run(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return code, out.String(), errb.String()
}

func workspaceWithNeedle(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.go"), []byte("package a\n\nfunc Needle() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestTheWorkspaceToolsRunInAgentlsAndEverythingElseInTheCore: with
// agentls-core beside it, agentls answers every command as the whole of
// agentls does (the version, the language tools in --list, an unknown
// command's exit status 2); without it, the workspace's own tools still
// run (they run in agentls itself), and every other command fails with
// exit status 127 and a message that names the missing program and how to
// install it, instead of doing something else.
func TestTheWorkspaceToolsRunInAgentlsAndEverythingElseInTheCore(t *testing.T) {
	dir := buildBoth(t)
	front := filepath.Join(dir, "agentls")
	ws := workspaceWithNeedle(t)
	grep := []string{"tool", "grep", `{"pattern":"Needle"}`, "--workspace", ws}

	for _, tc := range []struct {
		args       []string
		code       int
		out, err   string
		coreAbsent bool
	}{
		{args: []string{"version"}, out: "agentls front-test\n"},
		{args: grep, out: "a.go:3: func Needle() {}\n"},
		{args: []string{"tool", "--list", "--workspace", ws}, out: "rename_symbol"},
		{args: []string{"tool", "--schema", "grep"}, out: `"pattern"`},
		{args: []string{"tool", "read_file", `{"path":"nope.go"}`, "--workspace", ws}, code: 1, out: "no such file: nope.go"},
		{args: []string{"tool", "frobnicate", `{}`, "--workspace", ws}, code: 1, out: "valid tools: list_files, grep"},
		{args: []string{"tool"}, code: 2, err: "Usage: agentls tool"},
		{args: []string{"frobnicate"}, code: 2, err: `unknown command "frobnicate"`},

		{coreAbsent: true, args: grep, out: "a.go:3: func Needle() {}\n"},
		{coreAbsent: true, args: []string{"tool", "--schema", "grep"}, out: `"pattern"`},
		{coreAbsent: true, args: []string{"version"}, code: 127, err: "agentls-core is missing"},
		{coreAbsent: true, args: []string{"serve"}, code: 127, err: "make install"},
		{coreAbsent: true, args: nil, code: 127, err: "agentls-core is missing"},
		{coreAbsent: true, args: []string{"tool", "--list"}, code: 1, err: "agentls-core is missing"},
		{coreAbsent: true, args: []string{"tool", "rename_symbol", `{}`}, code: 1, err: "agentls-core is missing"},
	} {
		bin := front
		if tc.coreAbsent {
			alone := t.TempDir()
			copyFile(t, front, filepath.Join(alone, "agentls"))
			bin = filepath.Join(alone, "agentls")
		}
		code, out, errs := run(t, bin, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
			t.Errorf("agentls %q (core absent: %v) = exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout with %q, stderr with %q",
				tc.args, tc.coreAbsent, code, out, errs, tc.code, tc.out, tc.err)
		}
	}
}

// TestCommandsRunConfinedAsInTheCore: `agentls tool run_command` runs
// here, under the supervisor this program becomes when re-executed
// (sandbox.Main in its init), confined as agentls-core confines it: the
// sandbox line and what the command could do are the same from both.
func TestCommandsRunConfinedAsInTheCore(t *testing.T) {
	dir := buildBoth(t)
	ws := workspaceWithNeedle(t)
	outside := filepath.Join(t.TempDir(), "outside")
	args := []string{"tool", "run_command", `{"argv":["sh","-c","echo hi > inside; echo bye > ` + outside + ` || echo refused"]}`, "--workspace", ws}
	sandboxLine := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "sandbox:") {
				return l
			}
		}
		return ""
	}
	_, frontOut, frontErr := run(t, filepath.Join(dir, "agentls"), args...)
	_, coreOut, coreErr := run(t, filepath.Join(dir, "agentls-core"), args...)
	if sandboxLine(frontOut) == "" || sandboxLine(frontOut) != sandboxLine(coreOut) {
		t.Errorf("sandbox line from agentls %q, from agentls-core %q\nagentls: %s%s\nagentls-core: %s%s", sandboxLine(frontOut), sandboxLine(coreOut), frontOut, frontErr, coreOut, coreErr)
	}
	if strings.Contains(frontOut, "refused") != strings.Contains(coreOut, "refused") {
		t.Errorf("a write outside the workspace: agentls %q, agentls-core %q", frontOut, coreOut)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "inside")); err != nil || string(b) != "hi\n" {
		t.Errorf("the command's write inside the workspace: %q, %v", b, err)
	}
}

// TestAgentlsFindsTheCoreBesideItsOwnFileThroughALink: a link to agentls
// elsewhere (a ~/bin entry pointing into an install folder) finds
// agentls-core beside the file the link names, not beside the link.
func TestAgentlsFindsTheCoreBesideItsOwnFileThroughALink(t *testing.T) {
	dir := buildBoth(t)
	link := filepath.Join(t.TempDir(), "agentls")
	if err := os.Symlink(filepath.Join(dir, "agentls"), link); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, link, "version"); code != 0 || out != "agentls front-test\n" {
		t.Errorf("agentls version through a link = exit %d, %q, stderr %q", code, out, errs)
	}
}

// TestServeIsTheCoreInTheSameProcess: `agentls serve` becomes
// agentls-core in the process the editor started (the pid an editor
// signals, the pipes it holds), answers there, and exits 0 after the
// editor's shutdown and exit.
func TestServeIsTheCoreInTheSameProcess(t *testing.T) {
	dir := buildBoth(t)
	cmd := exec.Command(filepath.Join(dir, "agentls"), "serve")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exe := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"
	want := filepath.Join(dir, "agentls-core")
	// The exec happens at once; the wait is for it, bounded, and polls a
	// condition (no fixed sleep decides the result).
	deadline := time.Now().Add(30 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		if got, _ = os.Readlink(exe); got == want {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}`,
		`{"jsonrpc":"2.0","method":"initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`,
		`{"jsonrpc":"2.0","method":"exit"}`,
	} {
		if _, err := fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n%s", len(msg), msg); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	werr := cmd.Wait()
	if got != want {
		t.Fatalf("process %d runs %q; want %q", cmd.Process.Pid, got, want)
	}
	if werr != nil {
		t.Errorf("agentls serve after shutdown and exit: %v\nstdout: %s\nstderr: %s", werr, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), `"id":2`) {
		t.Errorf("no reply to shutdown on stdout: %s", out.String())
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// linkable are the modules agentls may link beside the standard library
// and its own tools and workspace packages: what the workspace's tools
// need (system calls, the command sandbox, diffs, globs, file watching).
// A package outside them is either one the tools now need, to be added
// here knowingly, or the server's, which belongs in agentls-core.
var linkable = []string{
	"golang.org/x/sys/",
	"golang.org/x/net/bpf",
	"github.com/elastic/go-seccomp-bpf",
	"github.com/landlock-lsm/go-landlock/",
	"kernel.org/pub/linux/libs/security/libcap/psx",
	"github.com/aymanbagabas/go-udiff",
	"github.com/bmatcuk/doublestar/",
	"github.com/fsnotify/fsnotify",
	"github.com/agentls/agentls/tools",
	"github.com/agentls/agentls/workspace",
	"github.com/agentls/agentls/internal/",
	"github.com/agentls/agentls/cmd/",
}

// heavyStandard are packages of the standard library whose
// initialization and size agentls does without: the network proxy's
// request parsing (tools/netproxy/httpproxy) is the server's. This is a
// start-up budget, not a boundary: a list of what costs, not of what is
// allowed.
var heavyStandard = []string{"net/http", "crypto/tls", "crypto/x509"}

// TestAgentlsLinksOnlyWhatItsToolsNeed: agentls starts fast because it
// links none of the server (LSP, ACP, the store, the model client, the
// Markdown renderer, MCP, the network proxy's HTTP): every package it
// links outside the standard library is in linkable, and none of
// heavyStandard.
func TestAgentlsLinksOnlyWhatItsToolsNeed(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Standard}}std:{{end}}{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var n int
	for _, pkg := range strings.Fields(string(out)) {
		if std, ok := strings.CutPrefix(pkg, "std:"); ok {
			if slices.Contains(heavyStandard, std) {
				t.Errorf("agentls links %s (heavyStandard): the server's packages belong in agentls-core", std)
			}
			continue
		}
		n++
		ok := false
		for _, prefix := range linkable {
			if strings.HasPrefix(pkg, prefix) {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("agentls links %s, which is not among what its tools need (linkable): the server's packages belong in agentls-core", pkg)
		}
	}
	if n < 5 {
		t.Fatalf("go list named %d packages: %q", n, out)
	}
}
