package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentls/agentls/workspace"
)

// openPTY opens a pseudo-terminal pair: the terminal's side (master) for
// the test, the program's side (slave) for agentls.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// screen is what the terminal has shown so far, with a signal per read.
type screen struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func (s *screen) read(f *os.File) {
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		s.mu.Lock()
		s.b.Write(buf[:n])
		s.mu.Unlock()
		select {
		case s.changed <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// text is the screen with the terminal's line endings as the program wrote them.
func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.ReplaceAll(s.b.String(), "\r\n", "\n")
}

// waitFor waits until the screen shows want (the condition, not a
// sleep), or fails after a generous deadline.
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(s.text(), want) {
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("the terminal never showed %q:\n%s", want, s.text())
		}
	}
}

// TestRunAsksOnTheTerminalWithTheDiffItWrites drives the built agentls
// run on a pseudo-terminal under approval "ask": the edit is asked about
// with its diff on the terminal; "y" writes exactly the change shown (the
// diff shown equals the diff from the text before to the text written,
// "ab c" for edits a→ab and b→c on "a b"), "n" writes nothing.
func TestRunAsksOnTheTerminalWithTheDiffItWrites(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())
	for _, tc := range []struct {
		answer, want string
	}{{"y", "ab c"}, {"n", "a b"}} {
		t.Run(tc.answer, func(t *testing.T) {
			startModel(t, `[{"toolCalls":[{"name":"edit_file","arguments":{"path":"ab.txt","edits":[{"old_string":"a","new_string":"ab"},{"old_string":"b","new_string":"c"}]}}]},{"text":"Edited.","times":-1}]`)
			dir := t.TempDir()
			path := filepath.Join(dir, "ab.txt")
			if err := os.WriteFile(path, []byte("a b"), 0o644); err != nil {
				t.Fatal(err)
			}
			master, slave := openPTY(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--workspace", dir, "--edit", "--validate", "off", "change ab.txt")
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "HOME="+t.TempDir())
			var stdout bytes.Buffer
			cmd.Stdin, cmd.Stderr, cmd.Stdout = slave, slave, &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close() // the child holds its own copy
			sc := &screen{changed: make(chan struct{}, 1)}
			go sc.read(master)
			sc.waitFor(t, "[n]o")
			if _, err := master.Write([]byte(tc.answer + "\n")); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("agentls run: %v\nterminal:\n%s", err, sc.text())
			}
			written, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(written) != tc.want {
				t.Errorf("ab.txt = %q; want %q", written, tc.want)
			}
			shown := sc.text()
			start := strings.Index(shown, "? agentls wants to edit ab.txt\n")
			end := strings.Index(shown, "[y]es once")
			if start < 0 || end < start {
				t.Fatalf("no question on the terminal:\n%s", shown)
			}
			question := shown[start:end]
			want := "--- a/ab.txt\n+++ b/ab.txt\n"
			for _, h := range workspace.DiffHunks("a b", "ab c") {
				want += h.Diff("a b")
			}
			if !strings.HasSuffix(question, "\n"+want) || !strings.Contains(want, "+ab c") {
				t.Errorf("question:\n%s\nwant it to show the diff written by a yes:\n%s", question, want)
			}
		})
	}
}
