package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// homeDir is a folder outside the workspace, the caches and /tmp (which
// the sandbox replaces): where the user's own programs keep their files.
func homeDir(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("no home folder: %v", err)
	}
	d, err := os.MkdirTemp(home, ".agentls-userprog-test-")
	if err != nil {
		t.Fatalf("cannot make a folder in the home folder: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestUserProgramRunsAsTheUsers: a program the user configured writes
// where the user can (a folder of the home folder that commands may not
// write), sees the user's own variables, and never the API key; the same
// line run as a command is refused by the sandbox.
func TestUserProgramRunsAsTheUsers(t *testing.T) {
	landlockABI(t)
	ws, home := t.TempDir(), homeDir(t)
	env := append(os.Environ(), "MY_KEY_VAR=sk-test-123456789", "MY_OWN_TOKEN=user-token-1")
	line := `echo "tok=$MY_OWN_TOKEN key=$MY_KEY_VAR" >> "$1/log.txt"`
	run := func(user bool) (RunResult, string) {
		var out Tail
		out.Max = 4096
		res, err := Run(context.Background(), RunSpec{
			Argv: []string{"sh", "-c", line, "sh", home}, Dir: ws, Env: env, SecretEnv: []string{"MY_KEY_VAR"},
			Stdout: &out, Stderr: &out, Timeout: time.Minute, UserProgram: user,
			Sandbox: SandboxOptions{Roots: []string{ws}},
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res, out.String()
	}
	res, out := run(false)
	if res.ExitCode == 0 {
		t.Fatalf("as a command the write to %s succeeded (%s); want the sandbox to refuse it", home, res.Sandbox)
	}
	res, out = run(true)
	if res.ExitCode != 0 {
		t.Fatalf("as the user's program: exit %d, %s; output %q", res.ExitCode, res.Sandbox, out)
	}
	b, err := os.ReadFile(filepath.Join(home, "log.txt"))
	if err != nil {
		t.Fatalf("the user's program wrote nothing: %v", err)
	}
	if got := strings.TrimSpace(string(b)); got != "tok=user-token-1 key=" {
		t.Errorf("the user's program saw %q; want its own token and no API key", got)
	}
	if !strings.Contains(res.Sandbox, "user's own program") {
		t.Errorf("label %q; want it to say the sandbox is off for the user's program", res.Sandbox)
	}
}

// TestWritableOnlyConfinesToOwnFolder: a program given its own folder
// writes there and nowhere else: not the workspace, not a cache folder,
// not the home folder.
func TestWritableOnlyConfinesToOwnFolder(t *testing.T) {
	landlockABI(t)
	ws, home := t.TempDir(), homeDir(t)
	own := filepath.Join(home, "own")
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		ok     bool
	}{
		{filepath.Join(own, "state.json"), true},
		{filepath.Join(ws, "planted.go"), false},
		{filepath.Join(home, "outside.txt"), false},
		{filepath.Join(cache, "agentls-writable-only-test.txt"), false},
	} {
		res, err := Run(context.Background(), RunSpec{
			Argv: []string{"sh", "-c", `echo x > "$1"`, "sh", tc.target}, Dir: ws, Timeout: time.Minute,
			Sandbox: SandboxOptions{Roots: []string{ws}, WritableOnly: []string{own}},
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		_, statErr := os.Stat(tc.target)
		os.Remove(tc.target)
		if got := res.ExitCode == 0 && statErr == nil; got != tc.ok {
			t.Errorf("writing %s: exit %d, exists %v (%s); want allowed=%v", tc.target, res.ExitCode, statErr == nil, res.Sandbox, tc.ok)
		}
	}
}
