package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/sandbox"
)

// TestReadOnlyRunWritesNothing: a ReadOnly run can read and print, but
// write nowhere (not the folder it runs in, not the temporary folder), and
// it does not get the server's key.
func TestReadOnlyRunWritesNothing(t *testing.T) {
	landlockABI(t)
	t.Setenv("OPENAI_API_KEY", "sk-readonly-test")
	dir := t.TempDir()
	tmp := t.TempDir()
	var out lockedOut
	line := "echo key=$OPENAI_API_KEY; echo x > f; echo y > " + filepath.Join(tmp, "g") + "; cat /etc/hostname >/dev/null && echo read-ok"
	res, err := Run(context.Background(), RunSpec{
		Argv: []string{"/bin/sh", "-c", line}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"},
		Stdout: &out, Stderr: &out, Timeout: time.Minute,
		Sandbox: SandboxOptions{Roots: []string{dir}, Network: true, ReadOnly: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Sandbox, "landlock (read-only") {
		t.Errorf("Sandbox = %q; want read-only landlock", res.Sandbox)
	}
	for _, p := range []string{filepath.Join(dir, "f"), filepath.Join(tmp, "g")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a read-only run wrote %s", p)
		}
	}
	if o := out.String(); !strings.Contains(o, "key=\n") || !strings.Contains(o, "read-ok") {
		t.Errorf("output %q; want no key and a successful read", o)
	}
}

// TestReadOnlyRunNeverUnconfined: with the sandbox off, a ReadOnly run is
// refused and nothing starts.
func TestReadOnlyRunNeverUnconfined(t *testing.T) {
	m := filepath.Join(t.TempDir(), "ran")
	_, err := Run(context.Background(), RunSpec{
		Argv: []string{"/bin/sh", "-c", "touch " + m}, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"},
		Sandbox: SandboxOptions{Mode: sandbox.Off, ReadOnly: true},
	})
	if !errors.Is(err, ErrNotConfined) {
		t.Errorf("Run(ReadOnly, sandbox off) = %v; want ErrNotConfined", err)
	}
	if _, err := os.Stat(m); err == nil {
		t.Error("the program ran unconfined")
	}
}

func TestLookPathSkipsWorkspaceAndRelativeEntries(t *testing.T) {
	root := t.TempDir()
	good := t.TempDir()
	for _, d := range []string{filepath.Join(root, "bin"), good} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	for _, tc := range []struct {
		path string
		want string
	}{
		{"bin:" + good, filepath.Join(good, "tool")},
		{filepath.Join(root, "bin") + ":" + good, filepath.Join(good, "tool")},
		{":" + filepath.Join(root, "bin"), ""},
	} {
		t.Setenv("PATH", tc.path)
		got, err := LookPath("tool", []string{root})
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("PATH=%s: LookPath = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}
