package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentls/agentls/workspace/ownfs"
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
	t.Setenv("TMPDIR", cache)
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

// TestPlanKeepsAgentlsOwnFoldersOut: no writable folder holds or lies in
// agentls's log and state folder or its configuration folder, whatever
// the environment points the caches at; a root that holds one (a
// workspace that is the home folder) keeps it read-only; ~/.cache is
// writable only in the build tools' own folders.
func TestPlanKeepsAgentlsOwnFoldersOut(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		t.Skip(err)
	}
	home := t.TempDir()
	state := filepath.Join(home, ".local", "state")
	tests := []struct {
		name     string
		env      map[string]string
		roots    []string
		dropped  []string // not writable
		readOnly []string
	}{
		{"the defaults", nil, []string{t.TempDir()},
			[]string{filepath.Join(home, ".cache"), state, filepath.Join(state, "agentls"), filepath.Join(home, ".config")}, nil},
		{"GOCACHE is the state folder", map[string]string{"GOCACHE": state}, []string{t.TempDir()},
			[]string{state}, nil},
		{"GOMODCACHE inside agentls's folder", map[string]string{"GOMODCACHE": filepath.Join(state, "agentls", "mod")}, []string{t.TempDir()},
			[]string{filepath.Join(state, "agentls", "mod")}, nil},
		{"the cache folder holds the configuration", map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, ".cache", "go-build", "cfg")}, []string{t.TempDir()},
			[]string{filepath.Join(home, ".cache", "go-build")}, nil},
		{"TMPDIR is home", map[string]string{"TMPDIR": home}, []string{t.TempDir()},
			[]string{home}, nil},
		{"the workspace is the home folder", nil, []string{home},
			nil, []string{filepath.Join(state, "agentls"), filepath.Join(home, ".config", "agentls")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "CARGO_HOME", "npm_config_cache", "GOTMPDIR"} {
				t.Setenv(k, "")
			}
			t.Setenv("HOME", home)
			t.Setenv("TMPDIR", t.TempDir())
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p, _ := Plan(WorkspaceWrite, tt.roots, false)
			if !slices.Contains(p.Writable, filepath.Join(home, ".cache", "go-build")) && tt.env["XDG_CONFIG_HOME"] == "" {
				t.Errorf("Go's build cache is not writable: %q", p.Writable)
			}
			for _, d := range tt.dropped {
				if slices.Contains(p.Writable, d) {
					t.Errorf("%s writable: %q", d, p.Writable)
				}
			}
			for _, o := range ownFolders() {
				for _, w := range p.Writable {
					if within(w, []string{o}) || (within(o, []string{w}) && !slices.Contains(p.ReadOnly, o)) {
						t.Errorf("writable %s reaches agentls's folder %s (read-only: %q)", w, o, p.ReadOnly)
					}
				}
			}
			for _, r := range tt.readOnly {
				if !slices.Contains(p.ReadOnly, r) {
					t.Errorf("%s not read-only: %q", r, p.ReadOnly)
				}
			}
			// The supervisor's policy, whatever was added after Plan, and
			// without the mount namespace (no read-only binds).
			p.Writable = append(p.Writable, filepath.Join(home, ".local"))
			p.ReadOnly = nil
			argv, err := Command(Self, p, []string{"true"})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := parseArgs(argv[2:])
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range got.Writable {
				if within(w, ownFolders()) || within(ownFolders()[0], []string{w}) || within(ownFolders()[1], []string{w}) {
					t.Errorf("the supervisor may write %s, which reaches agentls's folders %q", w, ownFolders())
				}
			}
		})
	}
}

func ownFolders() []string { return ownfs.Folders(os.Getenv) }

// TestTemporaryFallbackIsHiddenNotWritable: without a home folder the log
// falls back to /tmp/agentls-<uid>; the command's /tmp stays writable only
// where the mount namespace replaces it with an empty one (the fallback is
// not in it), and is dropped without the namespace.
func TestTemporaryFallbackIsHiddenNotWritable(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		t.Skip(err)
	}
	for _, k := range []string{"HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "CARGO_HOME", "npm_config_cache", "GOTMPDIR"} {
		t.Setenv(k, "")
	}
	t.Setenv("TMPDIR", "/tmp")
	p, _ := Plan(WorkspaceWrite, []string{t.TempDir()}, false)
	if !slices.Contains(p.Writable, "/tmp") {
		t.Fatalf("Plan dropped /tmp: %q", p.Writable)
	}
	for _, ns := range []bool{true, false} {
		q := p
		q.Namespaces = ns
		argv, err := Command(Self, q, []string{"true"})
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := parseArgs(argv[2:])
		if slices.Contains(got.Writable, "/tmp") != ns {
			t.Errorf("namespaces %v: /tmp writable %v; want %v", ns, !ns, ns)
		}
	}
}
