package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSessionSocketsFromTheEnvironment: every socket of the user's session
// the environment names is hidden, whatever the variable's syntax.
func TestSessionSocketsFromTheEnvironment(t *testing.T) {
	env := map[string]string{
		"SSH_AUTH_SOCK":            "/h/.ssh/agent.sock",
		"TMUX":                     "/tmp/tmux-1000/default,123,0",
		"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus,guid=x;unix:path=/h/bus2",
		"DOCKER_HOST":              "unix:///h/.docker/docker.sock",
		"GPG_AGENT_INFO":           "/h/.gnupg/S.gpg-agent:0:1",
		"XDG_RUNTIME_DIR":          "/run/user/1000",
		"WAYLAND_DISPLAY":          "wayland-0",
		"HOME":                     "/h",
	}
	got := sessionSockets(func(k string) string { return env[k] })
	for _, want := range []string{"/h/.ssh/agent.sock", "/tmp/tmux-1000/default", "/run/user/1000/bus", "/h/bus2",
		"/h/.docker/docker.sock", "/h/.gnupg/S.gpg-agent", "/run/user/1000", "/run/user/1000/wayland-0", "/h/.docker/run"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not hidden: %q", want, got)
		}
	}
}

// TestProtectedPathsFollowGitdirAndCommondir: a worktree's .git file, the
// git dir it names and the common dir that names are all protected.
func TestProtectedPathsFollowGitdirAndCommondir(t *testing.T) {
	main, wt := t.TempDir(), t.TempDir()
	gd := filepath.Join(main, ".git", "worktrees", "w")
	os.MkdirAll(gd, 0o755)
	os.WriteFile(filepath.Join(gd, "commondir"), []byte("../..\n"), 0o644)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+gd+"\n"), 0o644)
	got := ProtectedPaths(wt)
	for _, want := range []string{filepath.Join(wt, ".agentls"), filepath.Join(wt, ".git"), gd, filepath.Join(main, ".git")} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not protected: %q", want, got)
		}
	}
	if got := ProtectedPaths(t.TempDir()); len(got) != 1 {
		t.Errorf("no .git: %q; want .agentls only", got)
	}
}

// TestPlanMakesPathFoldersInCachesReadOnly: a PATH folder or toolchain bin
// folder inside a writable cache is read-only; one inside a root is not.
func TestPlanMakesPathFoldersInCachesReadOnly(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		t.Skip(err)
	}
	cache, root := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("GOBIN", filepath.Join(cache, "gobin"))
	t.Setenv("PATH", filepath.Join(cache, "bin")+":"+filepath.Join(root, "node_modules", ".bin")+":/usr/bin")
	p, _ := Plan(WorkspaceWrite, []string{root}, false)
	for _, want := range []string{filepath.Join(cache, "bin"), filepath.Join(cache, "gobin")} {
		if !slices.Contains(p.ReadOnly, want) {
			t.Errorf("%s writable: ReadOnly %q", want, p.ReadOnly)
		}
	}
	for _, no := range []string{filepath.Join(root, "node_modules", ".bin"), "/usr/bin"} {
		if slices.Contains(p.ReadOnly, no) {
			t.Errorf("%s needlessly bind-mounted: %q", no, p.ReadOnly)
		}
	}
	if p.Limits.FileBytes == 0 || p.Limits.DataBytes == 0 || p.Limits.Procs == 0 {
		t.Errorf("Limits %+v", p.Limits)
	}
}
