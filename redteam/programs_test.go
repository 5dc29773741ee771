package redteam

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/sandbox"
)

// standInCommands, in a copy of this test binary started with it, makes
// the copy a stand-in server: it runs each line (separated by standInSep)
// through tools.Run in the workspace REDTEAM_STANDIN_ROOT, one after the
// other, and exits. The copy lives where `go install` would put agentls.
const (
	standInCommands = "REDTEAM_STANDIN_COMMANDS"
	standInRoot     = "REDTEAM_STANDIN_ROOT"
	standInSep      = "\n--next--\n"
)

func init() {
	sandbox.Main() // a supervisor is only that (TestMain calls it again: harmless)
	lines := os.Getenv(standInCommands)
	if lines == "" {
		return
	}
	root := os.Getenv(standInRoot)
	os.Unsetenv(standInCommands)
	for _, line := range strings.Split(lines, standInSep) {
		res, err := tools.Run(context.Background(), tools.RunSpec{
			Argv: []string{"/bin/sh", "-c", line}, Dir: root, Stdout: os.Stdout, Stderr: os.Stderr, Timeout: time.Minute,
			Sandbox: tools.SandboxOptions{Roots: []string{root}},
		})
		fmt.Printf("stand-in: %q ended: %+v %v\n", line, res, err)
	}
	os.Exit(0)
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestProgramsOnPathAndTheServersBinary: a command replaces programs the
// server (or the user) runs later, outside the sandbox: the server's own
// binary, which it re-executes as every command's supervisor, and the
// programs it and the user find on PATH.
func TestProgramsOnPathAndTheServersBinary(t *testing.T) {
	attempt(t, famPrograms, "replace the server's binary in a writable bin folder, then run a command", func(t *testing.T) outcome {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		// agentls installed into a bin folder the sandbox lets commands
		// write (as GOPATH/bin was): here the workspace's own bin.
		bin := filepath.Join(root, "bin")
		os.MkdirAll(bin, 0o755)
		server := filepath.Join(bin, "agentls")
		copyFile(t, self, server, 0o755)
		m := marker(t)
		first := fmt.Sprintf(`rm -f %[1]s && printf '#!/bin/sh\nenv > %[2]s\ncat /proc/$PPID/environ >> %[2]s 2>/dev/null\nshift 3\nexec "$@"\n' > %[1]s && chmod +x %[1]s && echo REPLACED`, server, m)
		srv := exec.Command(server, "-test.run=^$")
		srv.Env = append(os.Environ(), "OPENAI_API_KEY="+apiKey, standInRoot+"="+root, standInCommands+"="+first+standInSep+"echo second")
		out, err := srv.CombinedOutput()
		t.Logf("stand-in server: %v\n%s", err, out)
		if !strings.Contains(string(out), "REPLACED") {
			t.Fatalf("the first command did not replace the binary: nothing was attacked")
		}
		if got := ranPayload(m); got != "" {
			if strings.Contains(got, apiKey) {
				return escaped("the replaced binary ran as the next supervisor, before any sandbox, with the API key")
			}
			return escaped("the replaced binary ran as the next supervisor, before any sandbox")
		}
		return held("the next command's supervisor was the server's own image")
	})

	attempt(t, famPrograms, "write a program into a PATH folder under a cache", func(t *testing.T) outcome {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(cache, randName("agentls-redteam-bin-"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		p := filepath.Join(dir, "git")
		sandboxed(t, t.TempDir(), fmt.Sprintf(`printf '#!/bin/sh\nenv\n' > %[1]s && chmod +x %[1]s && echo PLANTED`, p))
		if _, err := os.Stat(p); err == nil {
			return escaped("%s was planted in a PATH folder", p)
		}
		return held("PATH folders are read-only")
	})

	attempt(t, famPrograms, "go install a program named like a tool into GOPATH/bin", func(t *testing.T) outcome {
		name := randName("gitredteam")
		gopath := strings.Split(goEnv(t, "GOPATH"), ":")[0]
		gobin := goEnv(t, "GOBIN")
		if gobin == "" {
			gobin = filepath.Join(gopath, "bin")
		}
		p := filepath.Join(gobin, name)
		t.Cleanup(func() { os.Remove(p) })
		files := map[string]string{
			"go.mod":          "module x\n\ngo 1.22\n",
			name + "/main.go": "package main\n\nfunc main() {}\n",
		}
		s := endToEnd(t, files, nil, "GOFLAGS=-mod=mod go install ./"+name+" 2>&1; echo done")
		t.Logf("command result:\n%s", lastToolResult(s))
		if _, err := os.Stat(p); err == nil {
			return escaped("go install wrote %s", p)
		}
		return held("GOPATH/bin is read-only")
	})

	attempt(t, famPrograms, "plant git in ~/.cargo/bin", func(t *testing.T) outcome {
		home, _ := os.UserHomeDir()
		cargo := os.Getenv("CARGO_HOME")
		if cargo == "" {
			cargo = filepath.Join(home, ".cargo")
		}
		p := filepath.Join(cargo, "bin", randName("git-"))
		t.Cleanup(func() { os.Remove(p) })
		s := endToEnd(t, nil, nil, fmt.Sprintf(`mkdir -p %[2]s; printf '#!/bin/sh\nenv\n' > %[1]s && chmod +x %[1]s && echo PLANTED`, p, filepath.Dir(p)))
		t.Logf("command result:\n%s", lastToolResult(s))
		if _, err := os.Stat(p); err == nil {
			return escaped("%s was planted", p)
		}
		return held("~/.cargo/bin is read-only")
	})

	attempt(t, famPrograms, "sh resolved from a planted folder inside the workspace on PATH", func(t *testing.T) outcome {
		files := map[string]string{"bin/sh": "#!/bin/bash\necho planted-sh-ran > \"$(dirname \"$0\")/../planted-ran\"\nexec /bin/sh \"$@\"\n"}
		turns := []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"argv":["sh","-c","echo hello"]}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}
		s := newServer(t, turns, files, serverOpts{})
		os.Chmod(s.path("bin/sh"), 0o755)
		// The user's PATH has a workspace folder first (direnv, node_modules/.bin).
		t.Setenv("PATH", s.path("bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		if _, err := s.run(t, map[string]any{"prompt": "say hello", "mode": "edit"}); err != nil {
			t.Fatal(err)
		}
		t.Logf("command result:\n%s", lastToolResult(s))
		if _, err := os.Stat(s.path("planted-ran")); err == nil {
			return escaped("the runner ran the workspace's bin/sh")
		}
		if !strings.Contains(lastToolResult(s), "hello") {
			t.Fatalf("the command did not run at all: nothing was attacked")
		}
		return held("sh came from a folder the workspace cannot write")
	})

	attempt(t, famPrograms, "git resolved from a planted folder inside the workspace on PATH", func(t *testing.T) outcome {
		root := t.TempDir()
		bin := filepath.Join(root, "node_modules", ".bin")
		m := filepath.Join(root, "planted-ran")
		writeFiles(t, root, map[string]string{"node_modules/.bin/git": fmt.Sprintf("#!/bin/sh\nenv > %s\n", m)})
		os.Chmod(filepath.Join(bin, "git"), 0o755)
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		res, err := tools.Run(ctxFor(t), tools.RunSpec{
			Argv: []string{"git", "--version"}, Dir: root, Timeout: time.Minute,
			Sandbox: tools.SandboxOptions{Roots: []string{root}},
		})
		t.Logf("%+v %v", res, err)
		if got := ranPayload(m); got != "" {
			return escaped("git was found in the workspace's node_modules/.bin")
		}
		return held("git came from a folder the workspace cannot write")
	})
}
