package redteam

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// gitInit makes root a git repository with one commit of what it holds,
// then appends extraConfig to .git/config (as a checkout that came with
// it would have).
func gitInit(t *testing.T, root, extraConfig string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "initial"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if extraConfig == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(root, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(extraConfig); err != nil {
		t.Fatal(err)
	}
}

// touchLater moves a file's modification time forward, so git's stat
// check sees it changed and runs its clean filter on it.
func touchLater(t *testing.T, path string) {
	t.Helper()
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

// payload writes, outside any workspace, a script that records its
// environment in the marker file m (when it can) and then copies its
// stdin to stdout (so it also works as a git filter). It returns the
// script's path.
func payload(t *testing.T, m string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "payload.sh")
	script := "#!/bin/sh\nenv > '" + m + "' 2>/dev/null\nexec cat\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
