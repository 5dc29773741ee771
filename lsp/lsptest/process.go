package lsptest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Process is an agentls process driven over its stdio.
type Process struct {
	*Client
	Cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *SyncBuffer
	waited chan struct{}
	err    error // from Cmd.Wait, valid after waited is closed
}

// StartProcess starts bin with args and env (nil: the test's environment)
// and connects a client to its stdin and stdout. Its stderr is kept and
// printed when the test fails; the process is killed at test end if it is
// still running.
func StartProcess(t testing.TB, bin string, args, env []string, cfg Config) *Process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("stdin pipe: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	p := &Process{Cmd: cmd, stdin: stdin, stdout: stdout, stderr: &SyncBuffer{}, waited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.waited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.waited:
		default:
			_ = cmd.Process.Kill()
			<-p.waited
		}
		if t.Failed() {
			t.Logf("agentls stderr:\n%s", p.stderr.String())
		}
	})
	p.Client = ConnectRW(t, stdio{ReadCloser: stdout, stdin: stdin}, cfg)
	return p
}

// Stdin is the process's standard input, for writing raw frames.
func (p *Process) Stdin() io.Writer { return p.stdin }

// CloseStdin closes the process's standard input (end of input).
func (p *Process) CloseStdin() error { return p.stdin.Close() }

// Disconnect closes the process's standard input and output at once, as
// an editor that crashes does: the server's next write to stdout fails
// with a broken pipe. The client's connection ends with them.
func (p *Process) Disconnect() error {
	return errors.Join(p.stdin.Close(), p.stdout.Close())
}

// Stderr returns what the process wrote to stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Wait waits at most timeout for the process to exit and returns its exit
// code.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.waited:
	case <-time.After(timeout):
		return -1, fmt.Errorf("process still running after %v", timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	if p.err != nil {
		return -1, p.err
	}
	return 0, nil
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.waited }

type stdio struct {
	io.ReadCloser
	stdin io.WriteCloser
}

func (s stdio) Write(b []byte) (int, error) { return s.stdin.Write(b) }

func (s stdio) Close() error {
	return errors.Join(s.stdin.Close(), s.ReadCloser.Close())
}

// SyncBuffer is a bytes.Buffer that a writer goroutine (a log, a child's
// stderr) and a reading test can share.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
