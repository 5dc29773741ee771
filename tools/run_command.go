package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/tools/netproxy"
	"github.com/agentls/agentls/workspace"
	"github.com/agentls/agentls/workspace/ownfs"
)

type runCommandArgs struct {
	Command string   `json:"command,omitempty" desc:"a shell command line, run with sh -c"`
	Argv    []string `json:"argv,omitempty" desc:"a program and its arguments, run without a shell (instead of command)"`
	Cwd     string   `json:"cwd,omitempty" desc:"folder to run in (workspace-relative); default the workspace root"`
	Timeout float64  `json:"timeout,omitempty" desc:"seconds before the command and every process it started are killed; default 120"`
}

// CommandOutput is the Data of a run_command Result.
type CommandOutput struct {
	Command   string // the command line (argv joined with shell quoting)
	Cwd       string // workspace-relative folder it ran in
	ExitCode  int    // -1 when a signal killed it or it did not start
	Signal    string // e.g. "SIGKILL" when a signal killed it
	TimedOut  bool
	Cancelled bool
	Stdout    string // as shown: head and tail when long
	Stderr    string
	// Bytes and lines written to each stream in total.
	StdoutBytes, StderrBytes int64
	StdoutLines, StderrLines int
	// LogPath is the workspace-relative path of the full output, set when
	// some output was cut from Stdout or Stderr.
	LogPath  string
	Duration time.Duration
	// Sandbox is what the command ran under: "landlock (workspace-write;
	// ABI 7; no network)", "none: kernel has no Landlock", "off".
	Sandbox string
	// Leftovers is how many processes it left running that were killed
	// when it ended.
	Leftovers int
	// Network lists what it reached and what was refused through the
	// allowlist proxy ("network: reached proxy.golang.org:443").
	Network []string `json:",omitempty"`
}

// Output limits: what the model sees of each stream.
const (
	headLines = 40
	tailLines = 80
	headBytes = 4 << 10
	tailBytes = 12 << 10
	logMax    = 64 << 20 // bytes of the full log kept on disk
	killGrace = 2 * time.Second
	pipeGrace = 2 * time.Second
)

// Commands tracks running commands so they can all be killed at once, at
// server exit. It is safe for concurrent use.
type Commands struct {
	mu      sync.Mutex // guards running and closed
	running map[int]bool
	closed  bool
}

// NewCommands makes an empty tracker.
func NewCommands() *Commands { return &Commands{running: map[int]bool{}} }

var errShuttingDown = errors.New("agentls is shutting down; no new commands are started")

func (c *Commands) add(pid int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errShuttingDown
	}
	c.running[pid] = true
	return nil
}

func (c *Commands) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Commands) done(pid int) {
	c.mu.Lock()
	delete(c.running, pid)
	c.mu.Unlock()
}

// Running is the number of commands running now.
func (c *Commands) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.running)
}

// KillAll kills every running command with its whole process group and
// refuses new ones. Each run_command call then returns promptly.
func (c *Commands) KillAll() {
	c.mu.Lock()
	c.closed = true
	pids := make([]int, 0, len(c.running))
	for pid := range c.running {
		pids = append(pids, pid)
	}
	c.mu.Unlock()
	for _, pid := range pids {
		killGroup(pid, true)
	}
}

func newRunCommand(r *Registry) Tool {
	return newTool("run_command", RunsProgram, func(ctx context.Context, a *runCommandArgs) (Result, error) {
		return r.runCommand(ctx, a)
	})
}

// shellQuote joins argv into one line a shell would split back.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' ||
				'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) < 0 {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func (r *Registry) runCommand(ctx context.Context, a *runCommandArgs) (Result, error) {
	w := r.env.Workspace
	switch {
	case strings.TrimSpace(a.Command) != "" && len(a.Argv) > 0:
		return errorf("give either command (a shell line) or argv (a program and its arguments), not both"), nil
	case strings.TrimSpace(a.Command) == "" && len(a.Argv) == 0:
		return errorf("missing command: give command (a shell line, e.g. \"go test ./...\") or argv (e.g. [\"go\", \"test\", \"./...\"])"), nil
	case len(a.Argv) > 0 && a.Argv[0] == "":
		return errorf("argv[0] is empty: it must name the program to run"), nil
	}
	line := a.Command
	if len(a.Argv) > 0 {
		line = shellQuote(a.Argv)
	}
	dir := w.Roots()[0]
	cwdShown := "."
	if a.Cwd != "" && a.Cwd != "." {
		p, res := r.resolve(a.Cwd)
		if res != nil {
			return *res, nil
		}
		if rel := p.Rel(); r.inStateDir(p) || rel == ".git" || strings.HasPrefix(rel, ".git/") {
			return errorf("cwd %s: commands do not run in agentls's state folder or in .git; run them from the workspace", p), nil
		}
		fi, err := os.Stat(w.Abs(p))
		if err != nil || !fi.IsDir() {
			return errorf("cwd %s is not a folder of the workspace", p), nil
		}
		dir, cwdShown = w.Abs(p), p.String()
	}
	timeout := r.env.CommandTimeout
	var notes []string
	if a.Timeout < 0 {
		return errorf("timeout must be a positive number of seconds"), nil
	}
	if a.Timeout > 0 {
		timeout = time.Duration(a.Timeout * float64(time.Second))
		if timeout > r.env.MaxCommandTimeout {
			notes = append(notes, fmt.Sprintf("timeout lowered from %gs to the maximum, %s", a.Timeout, r.env.MaxCommandTimeout))
			timeout = r.env.MaxCommandTimeout
		}
	}
	summary := "run `" + line + "`"
	if cwdShown != "." {
		summary += " in " + cwdShown
	}
	// The question shows what runs: a command whose text the faces would
	// hide in part (a secret's value or shape) cannot be shown whole to
	// approve, so it is refused, asked or not.
	if r.env.Shown != nil && (r.env.Shown(line) != line || r.env.Shown(summary) != summary) {
		return errorf("run_command refused: the command holds text that agentls hides wherever it shows text (a secret's value, or the shape of a key or private key block), so it cannot be shown whole to be approved; it was not run. Do not write secrets or key material into a command line: let the program read them itself"), nil
	}
	if res, err := r.approve(ctx, ApprovalRequest{Tool: "run_command", Summary: summary, Command: line}); res != nil || err != nil {
		return deref(res), err
	}

	argv := a.Argv
	if len(argv) == 0 {
		argv = []string{r.env.Shell, "-c", a.Command}
	}
	roots := w.Roots()

	// The full log, kept when something is cut: in .agentls/commands,
	// opened without following links (a refused state folder: no log).
	// The state folder exists, so the sandbox can mount it read-only.
	id := time.Now().Format("20060102-150405") + "-" + randHex(3)
	logRel := filepath.ToSlash(filepath.Join(workspace.StateDirName, "commands", id+".log"))
	var logFile *os.File
	var logDir *ownfs.Dir
	if state, err := w.OpenState(); err == nil {
		if logDir, err = state.OpenDir("commands", true, 0o755); err == nil {
			logFile, _ = logDir.OpenFile(id+".log", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			defer logDir.Close()
		}
		state.Close()
	}
	lw := &logWriter{f: logFile}
	lw.printf("$ %s\n# cwd: %s\n", line, cwdShown)
	stdout := &stream{log: lw}
	stderr := &stream{log: lw}

	out := &CommandOutput{Command: line, Cwd: cwdShown, ExitCode: -1}
	start := time.Now()
	run, startErr := Run(ctx, RunSpec{
		Argv: argv, Dir: dir, Env: r.env.Environ, SecretEnv: r.env.SecretEnv,
		Stdout: stdout, Stderr: stderr, Timeout: timeout,
		Sandbox:  SandboxOptions{Mode: r.env.Sandbox, Network: r.env.Network, Proxy: r.env.Proxy, Roots: roots},
		Commands: r.env.Commands,
	})
	r.env.Index.Suspect() // it may have changed files the watcher has not reported yet
	out.Duration = time.Since(start).Round(time.Millisecond)
	if startErr != nil {
		lw.close()
		if logFile != nil {
			logDir.Remove(id + ".log")
		}
		if errors.Is(startErr, errShuttingDown) {
			return errorf("%v", startErr), nil
		}
		return errorf("command could not start: %v", startErr), nil
	}
	out.Cancelled, out.TimedOut = run.Cancelled, run.TimedOut
	out.ExitCode, out.Signal, out.Sandbox, out.Leftovers = run.ExitCode, run.Signal, run.Sandbox, run.Leftovers
	out.Network = netproxy.Summary(run.Network)
	notes = append(notes, run.Notes...) // limits hit, a .git the command created and that was removed
	for _, n := range run.Notes {
		lw.printf("# %s\n", n)
	}
	lw.printf("\n# %s after %s\n", statusText(out), out.Duration)
	lw.close()
	out.StdoutBytes, out.StderrBytes = stdout.total, stderr.total
	out.StdoutLines, out.StderrLines = stdout.lineCount(), stderr.lineCount()
	cut := stdout.cut() || stderr.cut()
	if cut && logFile != nil {
		out.LogPath = logRel
	} else if logFile != nil {
		logDir.Remove(id + ".log")
	}
	out.Stdout = stdout.render(out.LogPath)
	out.Stderr = stderr.render(out.LogPath)
	return renderCommand(out, timeout, notes), nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// statusText is one line: "exit code 0", "killed by SIGKILL (timeout)".
func statusText(o *CommandOutput) string {
	var s string
	switch {
	case o.Signal != "":
		s = "killed by " + o.Signal
	case o.ExitCode >= 0:
		s = fmt.Sprintf("exit code %d", o.ExitCode)
	default:
		s = "ended"
	}
	switch {
	case o.TimedOut:
		s += " (timed out; the whole process group was killed)"
	case o.Cancelled:
		s += " (cancelled; the whole process group was killed)"
	}
	return s
}

func renderCommand(o *CommandOutput, timeout time.Duration, notes []string) Result {
	failed := o.ExitCode != 0 || o.Signal != "" || o.TimedOut || o.Cancelled
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", o.Command)
	if o.Cwd != "." {
		fmt.Fprintf(&b, "(in %s)\n", o.Cwd)
	}
	status := statusText(o)
	if o.TimedOut {
		status = strings.Replace(status, "timed out", fmt.Sprintf("timed out after %s", timeout), 1)
	}
	if failed {
		fmt.Fprintf(&b, "FAILED: %s after %s\n", status, o.Duration)
	} else {
		fmt.Fprintf(&b, "%s after %s\n", status, o.Duration)
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "(%s)\n", n)
	}
	if o.Sandbox != "" {
		fmt.Fprintf(&b, "sandbox: %s\n", o.Sandbox)
	}
	if o.Leftovers > 0 {
		fmt.Fprintf(&b, "(%d %s it left running %s killed)\n", o.Leftovers, plural(o.Leftovers, "process", "processes"), plural(o.Leftovers, "was", "were"))
	}
	writeStream(&b, "stdout", o.Stdout, o.StdoutLines, o.StdoutBytes)
	writeStream(&b, "stderr", o.Stderr, o.StderrLines, o.StderrBytes)
	if o.LogPath != "" {
		fmt.Fprintf(&b, "full output: %s (read it with read_file and offset)\n", o.LogPath)
	}
	// Evidence: the command, its status and both streams, head and tail
	// (a test runner prints the failing test on stdout, the compiler on
	// stderr: a validator that sees only one misjudges the other).
	ev := fmt.Sprintf("$ %s\n%s\n", o.Command, status)
	for _, st := range []struct{ name, text string }{{"stdout", o.Stdout}, {"stderr", o.Stderr}} {
		if t := headTailLines(st.text, 8, 20); t != "" {
			ev += st.name + ":\n" + t + "\n"
		}
	}
	return Result{Text: strings.TrimRight(b.String(), "\n"), IsError: failed, Data: o, Evidence: ev}
}

func writeStream(b *strings.Builder, name, shown string, lines int, n int64) {
	if n == 0 {
		fmt.Fprintf(b, "%s: (empty)\n", name)
		return
	}
	fmt.Fprintf(b, "%s (%d %s, %d bytes):\n%s", name, lines, plural(lines, "line", "lines"), n, shown)
	if !strings.HasSuffix(shown, "\n") {
		b.WriteString("\n")
	}
}

// headTailLines keeps the first head and last tail lines of s, with a
// marker of what was left out between them.
func headTailLines(s string, head, tail int) string {
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) <= head+tail {
		return s
	}
	out := append([]string{}, lines[:head]...)
	out = append(out, fmt.Sprintf("[... %d lines ...]", len(lines)-head-tail))
	return strings.Join(append(out, lines[len(lines)-tail:]...), "\n")
}

// logWriter writes both streams, in arrival order, to the full log.
type logWriter struct {
	mu      sync.Mutex // guards all fields
	f       *os.File
	n       int64
	dropped bool
}

func (l *logWriter) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	if l.n+int64(len(p)) > logMax {
		if !l.dropped {
			fmt.Fprintf(l.f, "\n# [log cut at %d MiB: later output dropped]\n", logMax>>20)
			l.dropped = true
		}
		return
	}
	l.n += int64(len(p))
	l.f.Write(p)
}

func (l *logWriter) printf(format string, a ...any) { l.write([]byte(fmt.Sprintf(format, a...))) }

func (l *logWriter) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// stream keeps the head and the tail of one output stream.
type stream struct {
	log   *logWriter
	head  []byte // the first headBytes bytes
	tail  []byte // the last bytes (up to 2*tailBytes, trimmed on render)
	total int64
	lines int // "\n" seen
	last  byte
}

func (s *stream) Write(p []byte) (int, error) {
	s.log.write(p)
	s.total += int64(len(p))
	s.lines += bytes.Count(p, []byte{'\n'})
	if len(p) > 0 {
		s.last = p[len(p)-1]
	}
	if room := headBytes - len(s.head); room > 0 {
		s.head = append(s.head, p[:min(room, len(p))]...)
	}
	s.tail = append(s.tail, p...)
	if len(s.tail) > 2*tailBytes {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-tailBytes:]...)
	}
	return len(p), nil
}

// lineCount counts a final line without "\n" too.
func (s *stream) lineCount() int {
	if s.total > 0 && s.last != '\n' {
		return s.lines + 1
	}
	return s.lines
}

// full returns the whole output when it was all kept.
func (s *stream) full() ([]byte, bool) {
	if s.total <= int64(len(s.head)) {
		return s.head, true
	}
	if rest := s.total - int64(len(s.head)); rest <= int64(len(s.tail)) && rest <= tailBytes {
		return append(append([]byte(nil), s.head...), s.tail[int64(len(s.tail))-rest:]...), true
	}
	return nil, false
}

// cut reports whether render shows less than the whole output.
func (s *stream) cut() bool {
	text, ok := s.full()
	return !ok || s.lineCount() > headLines+tailLines || bytes.Count(text, []byte{'\n'}) > headLines+tailLines
}

// render is the text shown for the stream: all of it, or its head and
// tail with a marker of what was cut and where the full output is.
func (s *stream) render(logPath string) string {
	if s.total == 0 {
		return ""
	}
	if !s.cut() {
		text, _ := s.full()
		return string(text)
	}
	// Head: whole lines, at most headLines.
	head := s.head
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	} else {
		head = nil
	}
	head = firstNLines(head, headLines)
	// Tail: whole lines from the last tailBytes, at most tailLines.
	tail := s.tail
	if len(tail) > tailBytes {
		tail = tail[len(tail)-tailBytes:]
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		}
	}
	tail = lastNLines(tail, tailLines)
	headN := bytes.Count(head, []byte{'\n'})
	tailN := bytes.Count(tail, []byte{'\n'})
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		tailN++
	}
	cutLines := s.lineCount() - headN - tailN
	cutBytes := s.total - int64(len(head)) - int64(len(tail))
	where := ""
	if logPath != "" {
		where = "; full output: " + logPath
	}
	marker := fmt.Sprintf("... [%d lines (%d bytes) cut%s] ...\n", max(cutLines, 0), max(cutBytes, 0), where)
	return string(head) + marker + string(tail)
}

func firstNLines(b []byte, n int) []byte {
	off := 0
	for k := 0; k < n; k++ {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return b
		}
		off += i + 1
	}
	return b[:off]
}

func lastNLines(b []byte, n int) []byte {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	off := end
	for k := 0; k < n; k++ {
		i := bytes.LastIndexByte(b[:off], '\n')
		if i < 0 {
			return b
		}
		off = i
		if k == n-1 {
			return b[off+1:]
		}
	}
	return b[off+1:]
}

// presentRunCommand: "Run `go test ./...`"; when it ends, the program's
// exit and output.
func presentRunCommand(a *runCommandArgs, res *Result) Presentation {
	c := a.Command
	if c == "" {
		c = strings.Join(a.Argv, " ")
	}
	p := Presentation{Title: "Run `" + c + "`", Activity: "running " + shown(c), Kind: KindExecute}
	if res != nil {
		if out, ok := res.Data.(*CommandOutput); ok {
			p.Command = out
		}
	}
	return p
}
