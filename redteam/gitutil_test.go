package redteam

import (
	"fmt"
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

// gitIn runs git in dir with no user or system configuration, as gitInit
// does, and fails the test when it fails.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// plantCommonDir moves the shared part of root's git dir (objects, refs,
// config) to a folder outside the workspace, appends extraConfig to its
// config, and points root/.git/commondir at it: what a command that wrote
// .git/commondir leaves behind. It returns the planted folder.
func plantCommonDir(t *testing.T, root, extraConfig string) string {
	t.Helper()
	plant := filepath.Join(t.TempDir(), "common")
	if err := os.MkdirAll(plant, 0o755); err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join(root, ".git")
	for _, name := range []string{"objects", "refs", "config"} {
		if err := os.Rename(filepath.Join(gd, name), filepath.Join(plant, name)); err != nil {
			t.Fatal(err)
		}
	}
	appendFile(t, filepath.Join(plant, "config"), extraConfig)
	if err := os.WriteFile(filepath.Join(gd, "commondir"), []byte(plant+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return plant
}

// hooksDir is a folder outside the workspace where every hook git knows
// runs the payload p.
func hooksDir(t *testing.T, p string) string {
	t.Helper()
	d := t.TempDir()
	for _, h := range []string{"post-index-change", "reference-transaction", "post-checkout", "pre-commit",
		"post-commit", "post-merge", "pre-auto-gc", "post-rewrite", "fsmonitor-watchman", "pre-push", "push-to-checkout"} {
		if err := os.WriteFile(filepath.Join(d, h), []byte("#!/bin/sh\nexec '"+p+"' \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the file or folder src to dst (cp -a).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", src, dst, err, out)
	}
}

// gitTry runs git in dir as gitIn does and returns its error.
func gitTry(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %w: %s", args, err, out)
	}
	return nil
}
