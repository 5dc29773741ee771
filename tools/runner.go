package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentls/agentls/tools/netproxy"
	"github.com/agentls/agentls/tools/sandbox"
)

// SandboxOptions say how commands are confined.
type SandboxOptions struct {
	// Mode is sandbox.WorkspaceWrite (the default, "") or sandbox.Off.
	Mode string
	// Network allows TCP (with Landlock ABI 4 and later it is off
	// otherwise).
	Network bool
	// Proxy, when Network is false, is the command's network: the
	// allowlist proxy (package netproxy), reached through a bridge into
	// the command's network namespace, the only route out of it. Without
	// namespaces the command gets no network at all (Landlock's TCP rule
	// knows ports, not hosts). Ignored for ReadOnly runs.
	Proxy *netproxy.Proxy
	// Roots are the workspace roots: writable, with .agentls, .git/hooks and
	// .git/config read-only.
	Roots []string
	// ReadOnly runs the program with no writable folder at all and no
	// network (Roots and Network are ignored), for programs the server runs
	// for itself over workspace-controlled input (git for the report). It is
	// never run unconfined: where the sandbox is off or unavailable, Run
	// returns ErrNotConfined without starting it.
	ReadOnly bool
	// RootsReadOnly keeps the roots visible but not writable while the
	// caches (CacheDirs) stay writable: for programs the server runs for
	// itself that read the workspace and keep caches (a language server).
	RootsReadOnly bool
	// WritableOnly, when set, are the only folders the program may write
	// (besides harmless device files): no root, no cache. For a program the
	// repository names and the user approved (a workspace .mcp.json
	// server): it keeps its state in a folder of its own. The folders are
	// created when missing.
	WritableOnly []string
}

// ErrNotConfined is the error of a ReadOnly Run that could not be confined:
// nothing was started.
var ErrNotConfined = errors.New("the program was not started: it runs only in the sandbox, and the sandbox is off or unavailable")

// RunSpec is one command for Run.
type RunSpec struct {
	Argv []string // program and arguments (e.g. sh -c LINE)
	Dir  string
	// Stdin is the program's standard input; nil: Input, or /dev/null. A
	// long-lived program that speaks a protocol (a language server, an MCP
	// server) gets the read end of an os.Pipe here and its Stdout is the
	// other direction.
	Stdin io.Reader
	// Input is written whole to the standard input of a one-shot program
	// (a hook's JSON) when Stdin is nil; bytes rather than a reader, so a
	// start that is retried without namespaces sends it whole again.
	Input []byte
	// Env is the base environment (nil: this process's); Run passes it
	// through CommandEnv with SecretEnv.
	Env, SecretEnv []string
	// ExtraEnv are variables added as they are after CommandEnv filtered
	// the base: what the server or the user's own settings give this one
	// program (a hook's project folder, an MCP server's "env", which may
	// hold its token). Never from the workspace.
	ExtraEnv []string
	// Stdout and Stderr receive the output; they may be the same writer
	// only when it is safe for concurrent use.
	Stdout, Stderr io.Writer
	Timeout        time.Duration // 0: none
	Sandbox        SandboxOptions
	// Commands tracks the command so KillAll reaches it; nil: untracked.
	Commands *Commands
	// UserProgram runs one of the user's own programs (a hook or an MCP
	// server from the user's settings or the ACP client, never one a
	// repository names) as the user runs it: without the filesystem
	// sandbox (Sandbox is ignored) and with the user's environment minus
	// agentls's secrets (UserEnv), as Claude Code and Codex run them. It
	// still goes through the supervisor: killed at its timeout, no
	// survivors. The caller decides it from where the program came from.
	UserProgram bool

	probe bool // SandboxStatus's `true`: it cannot create a .git, so none is looked for
}

// RunResult is how a command ended.
type RunResult struct {
	ExitCode  int    // -1 when a signal killed it
	Signal    string // e.g. "SIGKILL"
	TimedOut  bool
	Cancelled bool
	// Sandbox says what the command ran under: "landlock (workspace-write;
	// ABI 7; no network)", "none: kernel has no Landlock", "off".
	Sandbox string
	// Leftovers is the number of processes the command left running that
	// were killed when it ended.
	Leftovers int
	// Notes are lines for the model and the report about what the
	// sandbox did: "file size limit (1024 MiB) hit", a .git the command
	// created and that was removed, what its network reached.
	Notes []string
	// Network is what the command asked the allowlist proxy for, and the
	// verdicts (SandboxOptions.Proxy).
	Network []netproxy.Event
}

// Run runs one command the way agentls runs every command (run_command and
// the check command): with an environment without secrets (CommandEnv),
// stdin closed, in the sandbox (package sandbox) when this binary can
// supervise (sandbox.Main ran), and with no survivors: on cancel or
// timeout everything it started gets SIGTERM, then SIGKILL after a grace
// period; when it ends, every process it left (even in another session or
// process group) is killed; when the server dies, even by SIGKILL, the
// supervisor's parent-death signal takes everything down with it. A non-nil
// error means the command did not start.
func Run(ctx context.Context, spec RunSpec) (res RunResult, err error) {
	if len(spec.Argv) == 0 {
		return RunResult{}, errors.New("no command")
	}
	if spec.Commands != nil && spec.Commands.isClosed() {
		return RunResult{}, errShuttingDown
	}
	base := spec.Env
	if base == nil {
		base = os.Environ()
	}
	runID := randHex(8)
	var env []string
	if spec.UserProgram {
		env = append(UserEnv(base, spec.SecretEnv), spec.ExtraEnv...)
		spec.Sandbox = SandboxOptions{Mode: sandbox.Off, Roots: spec.Sandbox.Roots}
	} else {
		env = append(CommandEnv(base, spec.SecretEnv), spec.ExtraEnv...)
	}
	env = append(env, runMarker+"="+runID)
	res = RunResult{ExitCode: -1}

	argv := slices.Clone(spec.Argv)
	prog, err := LookPath(argv[0], spec.Sandbox.Roots)
	if err != nil {
		return res, err
	}
	argv[0] = prog

	policy, label := sandbox.Policy{}, "none: this program cannot supervise commands (sandbox.Main did not run)"
	supervised := sandbox.Installed()
	if supervised {
		policy, label = sandbox.Plan(spec.Sandbox.Mode, spec.Sandbox.Roots, spec.Sandbox.Network)
		if l := testLimits.Load(); l != nil && policy.Landlock {
			policy.Limits = *l
		}
	}
	if spec.Sandbox.ReadOnly {
		// No writable folder at all, no network; never unconfined.
		if !supervised || !policy.Landlock {
			return res, fmt.Errorf("%w (%s)", ErrNotConfined, label)
		}
		// The read-only binds stay: they also keep git dirs outside a
		// private /tmp (a commondir or gitdir target) in view.
		policy.Writable, policy.Network = nil, false
		policy.WritableFiles = []string{"/dev/null"}
	}
	if spec.Sandbox.Proxy != nil && !spec.Sandbox.ReadOnly && policy.Landlock && !policy.Network {
		policy.Proxy = true
	}
	if spec.Sandbox.RootsReadOnly && policy.Landlock {
		policy.Writable = slices.DeleteFunc(slices.Clone(policy.Writable), func(d string) bool {
			return slices.Contains(spec.Sandbox.Roots, d)
		})
		// A root inside a writable cache folder (a workspace under /tmp)
		// is bound read-only where namespaces work.
		policy.ReadOnly = append(slices.Clone(policy.ReadOnly), spec.Sandbox.Roots...)
	}
	if len(spec.Sandbox.WritableOnly) > 0 && policy.Landlock {
		for _, d := range spec.Sandbox.WritableOnly {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return res, fmt.Errorf("the program's own folder: %w", err)
			}
		}
		// Only its own folders: the roots and caches stay visible and
		// read-only (a root inside a cache folder is bound read-only).
		policy.Writable = slices.Clone(spec.Sandbox.WritableOnly)
		policy.ReadOnly = append(slices.Clone(policy.ReadOnly), spec.Sandbox.Roots...)
		policy.Visible = append(slices.Clone(policy.Visible), spec.Sandbox.WritableOnly...)
	}
	var statusR, statusW *os.File
	dir := spec.Dir
	if supervised {
		// The supervisor gets the folder as an absolute path: it starts
		// in "/", never in the workspace.
		if dir, err = filepath.Abs(dir); err != nil {
			return res, err
		}
	}
	// handW is the runner's end of the pipe that hands the command its
	// folder and environment to a supervisor (sandbox.Handover).
	var handW *os.File
	// netSess is the proxy session of the run (Sandbox.Proxy), bridgeEnd the
	// supervisor's end of its socket.
	var netSess *netproxy.Session
	var bridgeEnd *os.File
	defer func() {
		if netSess != nil {
			res.Network = netSess.Close()
			res.Notes = append(res.Notes, netproxy.Summary(res.Network)...)
		}
	}()
	build := func(ns bool) (*exec.Cmd, error) {
		var cmd *exec.Cmd
		if supervised {
			// Re-executed from the server's own image (sandbox.Self),
			// never from a path a command can write.
			sp := policyFor(policy, ns)
			sargv, err := sandbox.Command(sandbox.Self, sp, argv)
			if err != nil {
				return nil, err
			}
			handR, w, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			handW = w
			cmd = exec.Command(sargv[0], sargv[1:]...)
			cmd.ExtraFiles = []*os.File{statusW, handR}
			if netSess != nil { // a start retried without namespaces
				netSess.Close()
				netSess = nil
			}
			if sp.Proxy {
				if netSess, bridgeEnd, err = spec.Sandbox.Proxy.Bridge(); err != nil {
					handR.Close()
					w.Close()
					return nil, err
				}
				cmd.ExtraFiles = append(cmd.ExtraFiles, bridgeEnd)
			}
			// Outside the workspace, with nothing of the command's
			// environment: no loader variable (LD_PRELOAD, an
			// LD_LIBRARY_PATH with an empty entry) and no library in the
			// workspace acts on the supervisor before it is confined.
			cmd.Dir, cmd.Env = "/", sandbox.SupervisorEnv(runMarker+"="+runID)
		} else {
			cmd = exec.Command(argv[0], argv[1:]...)
			cmd.Dir, cmd.Env = dir, env
		}
		cmd.Stdin = spec.Stdin
		if spec.Stdin == nil && spec.Input != nil {
			cmd.Stdin = bytes.NewReader(spec.Input)
		}
		setProcAttr(cmd, supervised, supervised && ns, newNet(policy))
		return cmd, nil
	}
	if supervised {
		if statusR, statusW, err = os.Pipe(); err != nil {
			return res, err
		}
		defer statusR.Close()
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return res, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return res, err
	}
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	ns := supervised && namespacesWork()
	created := func() []string { return nil }
	if !spec.probe {
		created = newGitDirs(policy, spec.Sandbox.Roots)
	}
	start := func(ns bool) (*exec.Cmd, error) {
		cmd, err := build(ns)
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		err = cmd.Start()
		if supervised {
			cmd.ExtraFiles[1].Close() // the supervisor's end of the handover
			if len(cmd.ExtraFiles) > 2 {
				cmd.ExtraFiles[2].Close() // and of the proxy bridge
			}
			if err != nil {
				handW.Close()
			} else {
				h, w := sandbox.Handover{Dir: dir, Env: env}, handW
				go func() { _ = sandbox.WriteHandover(w, h) }()
			}
		}
		return cmd, err
	}
	cmd, err := start(ns)
	if err != nil && ns && namespaceRefused(err) {
		namespacesFailed()
		ns = false
		cmd, err = start(false)
	}
	closeAll(outW, errW, statusW)
	if err != nil {
		closeAll(outR, errR)
		return res, err
	}
	if policy.Landlock {
		label = policyFor(policy, ns).Describe(spec.Sandbox.Mode)
		if spec.Sandbox.ReadOnly {
			label = fmt.Sprintf("landlock (read-only; ABI %d)", policy.ABI)
		}
		if len(spec.Sandbox.WritableOnly) > 0 {
			label = fmt.Sprintf("landlock (writes only %s; ABI %d)", strings.Join(spec.Sandbox.WritableOnly, ", "), policy.ABI)
		}
	}
	if policy.Proxy && !ns {
		res.Notes = append(res.Notes, "network: the allowlist needs a network namespace, which the kernel refused here: no network")
	}
	if spec.UserProgram {
		label = "off: the user's own program"
	}
	res.Sandbox = label
	defer func() { res.Notes = append(res.Notes, created()...) }()
	pid := cmd.Process.Pid
	if spec.Commands != nil {
		if err := spec.Commands.add(pid); err != nil {
			killGroup(pid, true) // KillAll ran while it started
		}
		defer spec.Commands.done(pid)
	}

	var copying sync.WaitGroup
	for _, c := range []struct {
		r *os.File
		w io.Writer
	}{{outR, spec.Stdout}, {errR, spec.Stderr}} {
		copying.Add(1)
		go func() {
			defer copying.Done()
			w := c.w
			if w == nil {
				w = io.Discard
			}
			io.Copy(w, c.r)
		}()
	}
	var status []byte
	statusDone := make(chan struct{})
	started := make(chan struct{}) // closed once the command itself runs
	go func() {
		defer close(statusDone)
		if statusR == nil {
			close(started)
			return
		}
		first := make([]byte, 1)
		if n, _ := io.ReadFull(statusR, first); n == 1 {
			if first[0] == sandbox.StartedByte {
				close(started)
			} else {
				status = first
			}
		}
		rest, _ := io.ReadAll(io.LimitReader(statusR, 1<<16))
		status = append(status, rest...)
	}()

	var mu sync.Mutex
	why := ""
	exited := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		var timeout <-chan time.Time
		if spec.Timeout > 0 {
			timer := time.NewTimer(spec.Timeout)
			defer timer.Stop()
			timeout = timer.C
		}
		var reason string
		select {
		case <-exited:
			return
		case <-ctx.Done():
			reason = "cancelled"
		case <-timeout:
			reason = "timeout"
		}
		mu.Lock()
		why = reason
		mu.Unlock()
		select {
		case <-started:
		default:
			// Still confining itself: nothing to stop gracefully.
			killGroup(pid, true)
			return
		}
		killGroup(pid, false)
		// Repeat SIGTERM during the grace period: a supervisor that is
		// process 1 of its namespace ignores it until its handler is set.
		grace := time.NewTimer(killGrace)
		defer grace.Stop()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-exited:
				return
			case <-tick.C:
				killGroup(pid, false)
				continue
			case <-grace.C:
				killGroup(pid, true)
			}
			break
		}
	}()
	_ = cmd.Wait()
	close(exited)
	<-killerDone
	killGroup(pid, true)                // what is left of its group
	res.Leftovers += sweepMarked(runID) // and anything that left it (no supervisor, or the supervisor was killed)
	copyDone := make(chan struct{})
	go func() { copying.Wait(); close(copyDone) }()
	select {
	case <-copyDone:
	case <-time.After(pipeGrace):
		// A process we could not kill holds the pipes: stop reading.
		outR.Close()
		errR.Close()
		<-copyDone
	}
	closeAll(outR, errR)
	<-statusDone

	mu.Lock()
	res.Cancelled, res.TimedOut = why == "cancelled", why == "timeout"
	mu.Unlock()
	var st sandbox.Status
	if supervised && json.Unmarshal(status, &st) == nil {
		if st.Error != "" && st.ExitCode == -1 && st.Signal == "" {
			if st.Refused && ns && !isClosed(started) {
				// Namespaces that cannot be set up count as refused: run it
				// without them (the label says what that leaves out).
				namespacesFailed()
				return Run(ctx, spec)
			}
			return res, fmt.Errorf("%s", st.Error)
		}
		res.ExitCode, res.Signal = st.ExitCode, st.Signal
		res.Leftovers += st.Killed
		if m := policy.LimitMessage(st.Signal); m != "" {
			res.Notes = append(res.Notes, m)
		}
		return res, nil
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Signal = signalOf(cmd.ProcessState)
	return res, nil
}

// testLimits replaces the sandbox's limits in tests (a file size limit a
// test can reach quickly); nil in production.
var testLimits atomic.Pointer[sandbox.Limits]

// runMarker is the environment variable that marks every process of one
// command, so the runner can find processes that left its process tree.
const runMarker = "AGENTLS_RUN_ID"

// SandboxStatus runs `true` as every command is run and returns what it
// ran under (RunResult.Sandbox): the line to tell the user once at start,
// e.g. "landlock (workspace-write; ABI 7; no network)" or "none: kernel has
// no Landlock" (commands then rely on approvals alone).
func SandboxStatus(ctx context.Context, opts SandboxOptions) (string, error) {
	// In a root (or /), never in this process's folder: the sandbox may
	// hide it (a private /tmp), and the probe would fail for that alone.
	dir := "/"
	if len(opts.Roots) > 0 {
		dir = opts.Roots[0]
	}
	res, err := Run(ctx, RunSpec{Argv: []string{"true"}, Dir: dir, Sandbox: opts, Timeout: 30 * time.Second, probe: true})
	if err != nil {
		return "", fmt.Errorf("sandbox probe: %w", err)
	}
	if res.ExitCode != 0 {
		return res.Sandbox, fmt.Errorf("sandbox probe: `true` ended with exit code %d, signal %q", res.ExitCode, res.Signal)
	}
	return res.Sandbox, nil
}

// policyFor is policy as the supervisor gets it with or without namespaces:
// without them nothing is bind-mounted.
func policyFor(policy sandbox.Policy, ns bool) sandbox.Policy {
	p := policy
	p.Namespaces = ns && p.Landlock
	if !ns {
		p.ReadOnly, p.Visible, p.Hide = nil, nil, nil
		p.Proxy = false // no namespace to bridge into: no network
	} else if p.Landlock && len(p.Writable) > 0 {
		// Private in the mount namespace: POSIX shared memory and
		// semaphores (Python's multiprocessing) work.
		p.Writable = append(slices.Clip(p.Writable), "/dev/shm")
	}
	if !p.Landlock {
		p.Namespaces = ns // sandbox off: PID and mount namespaces only
	}
	return p
}

// newNet: the supervisor gets a network namespace of its own when it
// confines the command and the network is not allowed.
func newNet(p sandbox.Policy) bool { return p.Landlock && !p.Network }

// newGitDirs notes, before a confined command runs, which roots have no
// .git, and returns what to call after it ended: a .git that appeared in
// such a root is removed (Landlock cannot refuse creating it, and git
// would run what its config names), with a note for the command's result.
// A .git the user created in that root while the command ran is removed
// too: nothing tells the two apart, and the note says what happened.
func newGitDirs(policy sandbox.Policy, roots []string) func() []string {
	if !policy.Landlock {
		return func() []string { return nil }
	}
	var missing []string
	for _, r := range roots {
		if _, err := os.Lstat(filepath.Join(r, ".git")); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, r)
		}
	}
	return func() []string {
		var notes []string
		for _, r := range missing {
			p := filepath.Join(r, ".git")
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			if err := os.RemoveAll(p); err != nil {
				notes = append(notes, fmt.Sprintf("the command created %s; removing it failed: %v", p, err))
				continue
			}
			notes = append(notes, fmt.Sprintf("the command created %s where there was none; it was removed (commands may not create git repositories)", p))
		}
		return notes
	}
}

// isClosed reports whether c is closed (c is only ever closed).
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
