package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentls/agentls/workspace/ownfs"
)

// Default limits of a command's processes (Limits).
const (
	DefaultProcs     = 4096    // processes and threads (RLIMIT_NPROC)
	DefaultDataBytes = 8 << 30 // per process: heap and private mappings (RLIMIT_DATA)
	DefaultFileBytes = 1 << 30 // per file written (RLIMIT_FSIZE)
)

// Plan is the policy for a command run in the workspace roots under mode
// (WorkspaceWrite, the default, or Off), with network allowed or not, and
// the line that says which sandbox it runs under. Namespaces is left false:
// the runner sets it when the kernel lets it create them.
//
// What the command may write is an allowlist: the roots and the caches
// builds write (CacheDirs). Inside them, read-only: each root's whole git
// dir (and what its gitdir: and commondir files point at) and .agentls;
// every PATH folder and toolchain bin folder outside the roots. agentls's
// own folders (its log and state, the user's configuration of agentls:
// ownfs.Folders) are never writable: a cache that holds one is dropped, a
// root that holds one gets it read-only (KeepOwnFoldersOut).
func Plan(mode string, roots []string, network bool) (Policy, string) {
	if mode == Off {
		return Policy{}, "off"
	}
	abi, err := KernelABI()
	if err != nil {
		return Policy{}, "none: " + err.Error()
	}
	p := Policy{Landlock: true, ABI: abi, Network: network}
	p.Writable = append(p.Writable, roots...)
	p.Writable = append(p.Writable, CacheDirs(os.Getenv)...)
	makeUserCaches(os.Getenv)
	p.WritableFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx"}
	p.WritableFiles = append(p.WritableFiles, cargoLocks(os.Getenv)...)
	for _, r := range roots {
		p.ReadOnly = append(p.ReadOnly, ProtectedPaths(r)...)
	}
	// Folders outside the writable ones are read-only by Landlock already;
	// toolchain bin folders are read-only even inside a root (a workspace
	// that is the home folder).
	for _, d := range PathDirs(os.Getenv("PATH")) {
		if within(d, p.Writable) && !within(d, roots) && !slices.Contains(p.ReadOnly, d) {
			p.ReadOnly = append(p.ReadOnly, d)
		}
	}
	for _, d := range ToolchainBins(os.Getenv) {
		if within(d, p.Writable) && !slices.Contains(p.ReadOnly, d) {
			p.ReadOnly = append(p.ReadOnly, d)
		}
	}
	// What a build must see of the folders the mount namespace replaces:
	// the roots (also when a caller takes their write right away), the
	// folders on PATH and, when the network is allowed, the resolver
	// configuration /etc/resolv.conf may link to (under /run).
	p.Visible = append(p.Visible, roots...)
	p.Visible = append(p.Visible, PathDirs(os.Getenv("PATH"))...)
	if network {
		if t, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && t != "/etc/resolv.conf" {
			p.Visible = append(p.Visible, filepath.Dir(t))
		}
	}
	p.Hide = sessionSockets(os.Getenv)
	p.Limits = Limits{Procs: DefaultProcs, DataBytes: DefaultDataBytes, FileBytes: DefaultFileBytes}
	// Own folders the mount namespace may hide (the temporary fallback
	// under /tmp) are left to Command, which knows whether it does: the
	// temporary folder stays writable here.
	ns := Policy{Namespaces: true, Writable: p.Writable, Visible: p.Visible, ReadOnly: p.ReadOnly}
	p.KeepOwnFoldersOut(roots, ns.visibleOwn(ownfs.Folders(os.Getenv)))
	return p, p.Describe(mode)
}

// replaced are the folders the mount namespace replaces with empty ones:
// the temporary folder every process shares, the runtime folders where the
// session's sockets live (/run/user/UID, tmux, D-Bus, docker, ssh-agent)
// and POSIX shared memory. Only what the policy names is put back.
var replaced = []string{"/tmp", "/run", "/var/run", "/dev/shm"}

// visibleOwn are the folders of own the command can see under p: with the
// mount namespace, one in a replaced folder is gone unless a path the
// policy binds back holds it or lies in it.
func (p *Policy) visibleOwn(own []string) []string {
	if !p.Namespaces {
		return own
	}
	back := slices.Concat(p.Writable, p.Visible, p.ReadOnly)
	return slices.DeleteFunc(slices.Clone(own), func(o string) bool {
		if !within(o, replaced) {
			return false
		}
		for _, b := range back {
			if (within(o, []string{b}) || within(b, []string{o})) && !slices.Contains(replaced, b) {
				return false // bound back, whole or in part
			}
		}
		return true
	})
}

// KeepOwnFoldersOut makes sure no folder of own (agentls's own folders) is
// writable under p: a writable folder inside one is dropped, and so is a
// writable file inside one; a writable folder that holds one is dropped
// too, unless it is one of roots (a workspace that is the home folder),
// where the own folder is made to exist and bind-mounted read-only.
// Command applies it again to every policy it starts (with no roots), so
// a writable folder added after Plan cannot reach them either: without the
// mount namespace (no read-only binds) even a root that holds one is
// dropped.
func (p *Policy) KeepOwnFoldersOut(roots, own []string) {
	if !p.Landlock {
		return
	}
	own = p.visibleOwn(own)
	var ro []string
	p.Writable = slices.DeleteFunc(slices.Clone(p.Writable), func(w string) bool {
		if within(w, own) {
			return true
		}
		for _, o := range own {
			switch {
			case !within(o, []string{w}) || slices.Contains(p.ReadOnly, o):
			case slices.Contains(roots, w):
				ro = append(ro, o)
			default:
				return true
			}
		}
		return false
	})
	for _, o := range ro {
		if err := os.MkdirAll(o, 0o700); err == nil && !slices.Contains(p.ReadOnly, o) {
			p.ReadOnly = append(p.ReadOnly, o)
		}
	}
	p.WritableFiles = slices.DeleteFunc(slices.Clone(p.WritableFiles), func(f string) bool { return within(f, own) })
}

// within reports whether path is one of dirs or below one of them.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// UserCaches are the folders of the user cache folder (~/.cache) that
// build tools write, by name: an allowlist, never ~/.cache wholesale
// (other programs keep what they later read or run there). Plan creates
// the missing ones, so Landlock (which grants rights on what exists) can
// allow them.
var UserCaches = []string{
	"go-build", "gopls", "golangci-lint", "staticcheck", // Go
	"pip", "pypoetry", "uv", "ruff", "pre-commit", // Python
	"yarn", "pnpm", "node-gyp", "typescript", "deno", "ms-playwright", // JavaScript
}

// CacheDirs are the folders toolchains write outside the workspace, from
// the environment getenv reads and each tool's documented defaults, without
// running any program: the temporary folder, Go's build cache (GOCACHE),
// module cache (GOMODCACHE) and checksum database cache (GOPATH/pkg), the
// UserCaches of ~/.cache, ~/.npm, and cargo's registry and git checkouts.
// Never GOPATH, ~/.cargo or ~/.cache wholesale: their bin folders hold
// programs the server and the user run later, and ~/.cache holds what
// other programs read.
func CacheDirs(getenv func(string) string) []string {
	var out []string
	add := func(d string) {
		if filepath.IsAbs(d) && !slices.Contains(out, filepath.Clean(d)) {
			out = append(out, filepath.Clean(d))
		}
	}
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	add(tmp)
	home := getenv("HOME")
	userCache := getenv("XDG_CACHE_HOME")
	if userCache == "" && home != "" {
		userCache = filepath.Join(home, ".cache")
	}
	if filepath.IsAbs(userCache) {
		for _, n := range UserCaches {
			add(filepath.Join(userCache, n))
		}
	}
	if c := getenv("GOCACHE"); c != "" && c != "off" {
		add(c)
	}
	add(getenv("GOTMPDIR"))
	gopath := goPath(getenv)
	if c := getenv("GOMODCACHE"); c != "" {
		add(c)
	} else if gopath != "" {
		add(filepath.Join(gopath, "pkg", "mod"))
	}
	if gopath != "" {
		add(filepath.Join(gopath, "pkg", "sumdb"))
	}
	if home != "" {
		add(filepath.Join(home, ".npm"))
	}
	if c := getenv("npm_config_cache"); c != "" {
		add(c)
	}
	if cargo := cargoHome(getenv); cargo != "" {
		add(filepath.Join(cargo, "registry"))
		add(filepath.Join(cargo, "git"))
	}
	return out
}

// makeUserCaches creates the UserCaches that are missing, when the user
// cache folder exists.
func makeUserCaches(getenv func(string) string) {
	c := getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(c) {
		if h := getenv("HOME"); filepath.IsAbs(h) {
			c = filepath.Join(h, ".cache")
		}
	}
	if fi, err := os.Stat(c); err != nil || !fi.IsDir() {
		return
	}
	for _, n := range UserCaches {
		_ = os.Mkdir(filepath.Join(c, n), 0o755)
	}
}

// cargoLocks are the lock files cargo takes in CARGO_HOME itself (the
// package cache lock) while ~/.cargo stays read-only; they are created
// empty when cargo's home exists and they do not, so Landlock can allow
// them (it grants rights on what exists).
func cargoLocks(getenv func(string) string) []string {
	home := cargoHome(getenv)
	if fi, err := os.Stat(home); home == "" || err != nil || !fi.IsDir() {
		return nil
	}
	var out []string
	for _, n := range []string{".package-cache", ".package-cache-mutate"} {
		p := filepath.Join(home, n)
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			f.Close()
			out = append(out, p)
		}
	}
	return out
}

// goPath is the first folder of GOPATH, or its default ~/go.
func goPath(getenv func(string) string) string {
	if gp := getenv("GOPATH"); gp != "" {
		for _, d := range filepath.SplitList(gp) {
			if filepath.IsAbs(d) {
				return d
			}
		}
		return ""
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, "go")
	}
	return ""
}

func cargoHome(getenv func(string) string) string {
	if c := getenv("CARGO_HOME"); c != "" {
		return c
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".cargo")
	}
	return ""
}

// ToolchainBins are the folders toolchains install programs into, whether
// or not they are on PATH: GOBIN, GOPATH/bin, CARGO_HOME/bin, ~/.local/bin
// and npm's global bin.
func ToolchainBins(getenv func(string) string) []string {
	var out []string
	add := func(d string) {
		if filepath.IsAbs(d) && !slices.Contains(out, filepath.Clean(d)) {
			out = append(out, filepath.Clean(d))
		}
	}
	add(getenv("GOBIN"))
	if gp := getenv("GOPATH"); gp != "" {
		for _, d := range filepath.SplitList(gp) {
			add(filepath.Join(d, "bin"))
		}
	} else if d := goPath(getenv); d != "" {
		add(filepath.Join(d, "bin"))
	}
	if c := cargoHome(getenv); c != "" {
		add(filepath.Join(c, "bin"))
	}
	home := getenv("HOME")
	if home != "" {
		add(filepath.Join(home, ".local", "bin"))
		add(filepath.Join(home, ".npm-global", "bin"))
	}
	if p := getenv("npm_config_prefix"); p != "" {
		add(filepath.Join(p, "bin"))
	}
	if p := getenv("NPM_CONFIG_PREFIX"); p != "" {
		add(filepath.Join(p, "bin"))
	}
	return out
}

// PathDirs are the absolute folders of a PATH value, cleaned, without
// duplicates; relative entries (".", "", "bin") are left out.
func PathDirs(path string) []string {
	var out []string
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// sessionSockets are the sockets (and their folders) of the user's session
// that the environment names: ssh-agent, tmux, the D-Bus session bus,
// docker, gpg-agent, Wayland and the runtime folder. The mount namespace
// hides them (most live under /tmp or /run, which it replaces anyway).
func sessionSockets(getenv func(string) string) []string {
	var out []string
	add := func(p string) {
		if filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	add(getenv("SSH_AUTH_SOCK"))
	tmux, _, _ := strings.Cut(getenv("TMUX"), ",")
	add(tmux)
	for _, a := range strings.Split(getenv("DBUS_SESSION_BUS_ADDRESS"), ";") {
		for _, kv := range strings.Split(strings.TrimPrefix(a, "unix:"), ",") {
			if p, ok := strings.CutPrefix(kv, "path="); ok {
				add(p)
			}
		}
	}
	if p, ok := strings.CutPrefix(getenv("DOCKER_HOST"), "unix://"); ok {
		add(p)
	}
	gpg, _, _ := strings.Cut(getenv("GPG_AGENT_INFO"), ":")
	add(gpg)
	rt := getenv("XDG_RUNTIME_DIR")
	add(rt)
	if w := getenv("WAYLAND_DISPLAY"); w != "" && rt != "" && !filepath.IsAbs(w) {
		add(filepath.Join(rt, w))
	}
	if home := getenv("HOME"); home != "" {
		add(filepath.Join(home, ".docker", "run"))
		add(filepath.Join(home, ".gnupg"))
	}
	return out
}

// ProtectedPaths are the paths of root commands may read but not write:
// the agentls state folder (settings that widen approvals) and the whole
// git dir (config, hooks, commondir, info/attributes: what git runs later,
// outside the sandbox), whether .git is a folder or a "gitdir:" file, with
// the git dir such a file points at and the common dir a commondir file
// names. Paths that do not exist are left out (the runner removes a .git a
// command created).
//
// A .agentls that is a link is left out: agentls refuses it (it writes
// nothing through it), and a read-only bind would follow it.
func ProtectedPaths(root string) []string {
	var out []string
	if fi, err := os.Lstat(filepath.Join(root, ".agentls")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		out = append(out, filepath.Join(root, ".agentls"))
	}
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return out
	}
	out = append(out, dotgit)
	gitdir := dotgit
	if fi.Mode().IsRegular() {
		b, err := os.ReadFile(dotgit)
		if err != nil {
			return out
		}
		t, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return out
		}
		t = strings.TrimSpace(t)
		if !filepath.IsAbs(t) {
			t = filepath.Join(root, t)
		}
		gitdir = filepath.Clean(t)
		out = append(out, gitdir)
	}
	if b, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitdir, c)
		}
		if c = filepath.Clean(c); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}
