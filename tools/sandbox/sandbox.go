// Package sandbox runs one command in a supervised, confined child of
// agentls: the server re-executes its own image (Self, /proc/self/exe)
// with the hidden argument Arg; that child (the supervisor) confines
// itself and then starts the command, waits for it, and kills every
// process the command left behind before it exits.
//
// On Linux the supervisor is, when the kernel lets it, process 1 of its own
// PID, mount and (network off) network namespaces: nothing the command
// starts can leave the namespace (setsid and setpgid do not help), and the
// kernel kills all of it when the supervisor dies, even by SIGKILL after
// the server died (the supervisor has a parent-death signal). The network
// namespace holds only lo. In the mount namespace it replaces /tmp, /run
// and /dev/shm with empty ones (binding the workspace and caches that
// live there back at their path), hides the session's sockets, bind-mounts
// each root's whole git dir, .agentls and the PATH and toolchain bin
// folders read-only, and mounts a fresh /proc. It sets limits on
// processes, data and file size. Then it restricts itself and every
// process it starts with Landlock (github.com/landlock-lsm/go-landlock):
// reads anywhere, writes only in the workspace and the build caches, no
// TCP without a network namespace unless the network is allowed; without
// namespaces a seccomp filter refuses non-unix sockets.
//
// Landlock restricts a whole process, which is why it is applied in a
// child and never in the server. Binaries that run commands must call Main
// first in main (and test binaries in TestMain).
package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/agentls/agentls/workspace/ownfs"
)

// Arg is the hidden first argument that makes an agentls binary a
// supervisor: agentls __sandbox-exec POLICY_JSON -- PROGRAM ARGS...
const Arg = "__sandbox-exec"

// Modes of the sandbox setting.
const (
	WorkspaceWrite = "workspace-write"
	Off            = "off"
)

// Policy is what the supervisor applies before it starts the command.
type Policy struct {
	// Landlock restricts writes to Writable and WritableFiles (and TCP
	// unless Network); false runs the command unconfined.
	Landlock bool `json:"landlock"`
	// ABI is the Landlock ABI version to use, exactly (no best effort).
	ABI           int      `json:"abi,omitempty"`
	Writable      []string `json:"writable,omitempty"`
	WritableFiles []string `json:"writableFiles,omitempty"`
	// ReadOnly are paths (inside Writable) bind-mounted read-only; they
	// need the mount namespace.
	ReadOnly []string `json:"readOnly,omitempty"`
	// Visible are folders kept (read-only unless Writable) when the mount
	// namespace replaces the folder holding them (/tmp, /run, /dev/shm).
	Visible []string `json:"visible,omitempty"`
	// Hide are sockets and folders of the user's session hidden in the
	// mount namespace (an empty folder or /dev/null over them).
	Hide    []string `json:"hide,omitempty"`
	Network bool     `json:"network,omitempty"`
	// Namespaces: the supervisor is process 1 of new PID and mount
	// namespaces, and of a new network namespace unless Network.
	Namespaces bool `json:"namespaces,omitempty"`
	// Proxy: the command's network is agentls's proxy (package netproxy)
	// alone, through the bridge on ProxyFD; it needs Namespaces and
	// Landlock, and Network false (its network namespace holds only lo).
	Proxy  bool   `json:"proxy,omitempty"`
	Limits Limits `json:"limits,omitzero"`
}

// Limits bound the command's processes (setrlimit in the supervisor, so
// they hold for everything it starts); 0 leaves a limit as it is.
type Limits struct {
	// Procs is RLIMIT_NPROC: processes and threads of the user. A root
	// server's commands ignore it (the kernel exempts root); a non-root
	// server's commands are counted in their own user namespace.
	Procs uint64 `json:"procs,omitempty"`
	// DataBytes is RLIMIT_DATA, per process (not RLIMIT_AS: the race
	// detector reserves terabytes of address space it never uses).
	DataBytes uint64 `json:"data,omitempty"`
	// FileBytes is RLIMIT_FSIZE: a write past it gets SIGXFSZ.
	FileBytes uint64 `json:"file,omitempty"`
}

// StartedByte is written on the status pipe when the command has started,
// before the Status.
const StartedByte = 'S'

// Status is what the supervisor reports on its status pipe (fd 3) when the
// command has ended (after StartedByte if it started).
type Status struct {
	ExitCode int    `json:"exit"`
	Signal   string `json:"signal,omitempty"`
	Error    string `json:"error,omitempty"` // the command could not start or be confined
	Killed   int    `json:"killed"`          // processes killed after the command ended
	// Refused: the kernel refused the mounts or the loopback in the new
	// namespaces; the command did not start and can run without them.
	Refused bool `json:"refused,omitempty"`
}

var installed atomic.Bool

// Main makes this binary able to supervise commands. When the process was
// started as a supervisor (os.Args[1] == Arg) it runs the command and
// exits; otherwise it returns and Installed reports true.
func Main() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(supervise(os.Args[2:]))
	}
	installed.Store(canSupervise)
}

// Installed reports whether Main ran in this process (on Linux), so
// re-executing this process's own image (Self) with Arg starts a
// supervisor.
func Installed() bool { return installed.Load() }

// Self is the image the supervisor is re-executed from: the running
// server's own, through the kernel, never a path in the file system that a
// command could replace (os.Executable names such a path; GOPATH/bin is
// where `go install` puts agentls).
const Self = "/proc/self/exe"

// Command is the argv of the supervisor for policy and the command argv;
// exe is Self.
//
// It is the last word on what the supervisor may write: agentls's own
// folders stay out of it (KeepOwnFoldersOut), whatever was added to p
// after Plan.
func Command(exe string, p Policy, argv []string) ([]string, error) {
	p.KeepOwnFoldersOut(nil, ownfs.Folders(os.Getenv))
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("sandbox policy: %w", err)
	}
	return append([]string{exe, Arg, string(b), "--"}, argv...), nil
}

// HandoverFD is the supervisor's file descriptor the runner writes the
// Handover to (a pipe, closed after it).
const HandoverFD = 4

// ProxyFD is the supervisor's file descriptor of the proxy bridge (a unix
// socket whose other end is agentls's proxy, outside the sandbox), when
// Policy.Proxy.
const ProxyFD = 5

// MaxHandover bounds what the supervisor reads from the handover pipe.
const MaxHandover = 8 << 20

// Handover is what the command gets that the supervisor itself never uses:
// its folder and its environment. The supervisor is started in "/" with an
// environment of its own (SupervisorEnv), so nothing of the workspace or of
// the command's environment (an LD_PRELOAD, an LD_LIBRARY_PATH with an
// empty entry, an MCP server's "env") acts on agentls before it is
// confined; it applies both only when it starts the command. It travels on
// a pipe, never on the command line (readable by every process in /proc).
type Handover struct {
	Dir string   `json:"dir"`
	Env []string `json:"env"`
}

// SupervisorEnv is the whole environment a supervisor is started with:
// keep (e.g. the run's marker) and nothing else. The Go runtime needs no
// variable; the dynamic loader of a binary built with cgo (test binaries
// under -race) reads LD_* ones, which is why none gets through.
func SupervisorEnv(keep ...string) []string {
	var env []string
	for _, kv := range keep {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" && !strings.HasPrefix(name, "LD_") {
			env = append(env, kv)
		}
	}
	return env
}

// WriteHandover writes h to w (the runner's end of the handover pipe) and
// closes w.
func WriteHandover(w io.WriteCloser, h Handover) error {
	err := json.NewEncoder(w).Encode(h)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// readHandover reads the Handover from r (the supervisor's end).
func readHandover(r io.Reader) (Handover, error) {
	var h Handover
	b, err := io.ReadAll(io.LimitReader(r, MaxHandover+1))
	if err != nil {
		return h, fmt.Errorf("sandbox handover: %w", err)
	}
	if len(b) > MaxHandover {
		return h, fmt.Errorf("sandbox handover: more than %d bytes", MaxHandover)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("sandbox handover: %w", err)
	}
	if !filepath.IsAbs(h.Dir) {
		return h, fmt.Errorf("sandbox handover: the command's folder %q is not absolute", h.Dir)
	}
	return h, nil
}

func parseArgs(args []string) (Policy, []string, error) {
	var p Policy
	if len(args) < 3 || args[1] != "--" {
		return p, nil, fmt.Errorf("usage: agentls %s POLICY_JSON -- PROGRAM [ARGS...]", Arg)
	}
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return p, nil, fmt.Errorf("sandbox policy: %w", err)
	}
	return p, args[2:], nil
}

// Describe is the one line a command result shows about its sandbox. It
// names what is not covered: with namespaces the network is a namespace of
// its own; without them a seccomp filter refuses every socket but unix
// ones, and unix sockets (by path or abstract), /tmp and the read-only
// .git and .agentls are not isolated.
func (p Policy) Describe(mode string) string {
	if mode == Off {
		return "off"
	}
	if !p.Landlock {
		return "none"
	}
	var extra []string
	switch {
	case p.Network:
		extra = append(extra, "network allowed")
	case p.Proxy && p.Namespaces:
		extra = append(extra, "network: the allowlist, through agentls's proxy")
	case p.Namespaces || len(p.ReadOnly) > 0:
		extra = append(extra, "no network")
	default:
		extra = append(extra, "no network: seccomp refuses non-unix sockets; unix sockets not isolated: no namespaces")
	}
	if len(p.ReadOnly) == 0 && !p.Namespaces {
		extra = append(extra, ".git, .agentls and /tmp not isolated: no mount namespace")
	}
	return fmt.Sprintf("landlock (%s; ABI %d; %s)", WorkspaceWrite, p.ABI, strings.Join(extra, "; "))
}

// LimitMessage is the line a command result shows when the command was
// killed by signal (a name such as "SIGXFSZ") because a limit of p was
// hit, or "".
func (p Policy) LimitMessage(signal string) string {
	switch {
	case signal == "SIGXFSZ" && p.Limits.FileBytes > 0:
		return fmt.Sprintf("file size limit (%d MiB) hit", p.Limits.FileBytes>>20)
	}
	return ""
}
