package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const crashEnv = "AGENTLS_STORE_CRASH_CHILD"

// crashContent is the content of message seq, checked after the crash.
func crashContent(seq int) string {
	return fmt.Sprintf("message %d ", seq) + strings.Repeat("x", 200+seq%700)
}

// TestCrashChild is the child process of TestCrashKeepsFlushedWrites. It
// writes messages for ever, flushing every few and printing "ack N" once
// message N is flushed, until it is killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("child process of TestCrashKeepsFlushedWrites")
	}
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	must(t, s.CreateTask(Task{ID: "T", Prompt: "crash me", State: "executing"}))
	for seq := 0; ; seq++ {
		role := "assistant"
		if seq%2 == 1 {
			role = "tool"
		}
		must(t, s.AppendMessage("T", Message{Seq: seq, Role: role, Content: crashContent(seq), ModelCall: role == "assistant", Usage: Usage{InputTokens: 1}}))
		must(t, s.RecordToolCall("T", ToolCall{CallID: strconv.Itoa(seq), Name: "read_file", Duration: time.Millisecond}))
		if seq%5 == 4 {
			must(t, s.Flush(ctx))
			fmt.Printf("ack %d\n", seq)
		}
	}
}

// TestCrashKeepsFlushedWrites runs a writer in a child process, kills it
// with SIGKILL while it writes, and checks that the database is intact, that
// every write acknowledged by Flush is there, that what is there is a gapless
// prefix with no duplicates, and that the task is offered for resume and
// continues where it stopped.
func TestCrashKeepsFlushedWrites(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())

	lastAck := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "ack "); ok {
			lastAck, _ = strconv.Atoi(n)
			if lastAck >= 150 {
				break
			}
		} else if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
	}
	if lastAck < 150 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child stopped after ack %d: %v", lastAck, sc.Err())
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL)) // mid-write: the child never stops writing
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v; want killed by SIGKILL", err)
	}

	s := openTest(t, path)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("database corrupt after SIGKILL: %v", err)
	}
	rec, err := s.LoadTask(ctx, "T")
	must(t, err)
	if len(rec.Messages) <= lastAck {
		t.Fatalf("%d messages survived; want at least %d (every acknowledged write)", len(rec.Messages), lastAck+1)
	}
	for i, m := range rec.Messages {
		if m.Seq != i || m.Content != crashContent(i) {
			t.Fatalf("message %d = seq %d %.20q; want a gapless prefix of the written messages", i, m.Seq, m.Content)
		}
	}
	calls := 0
	for _, m := range rec.Messages {
		if m.ModelCall {
			calls++
		}
	}
	if rec.LLMCalls != calls || rec.Usage.InputTokens != calls {
		t.Errorf("task totals: %d calls, %d tokens; want %d (totals commit with their message)", rec.LLMCalls, rec.Usage.InputTokens, calls)
	}
	t.Logf("acknowledged up to %d, %d messages survived the kill", lastAck, len(rec.Messages))

	in, err := s.Interrupted(ctx)
	must(t, err)
	if len(in) != 1 || in[0].ID != "T" {
		t.Fatalf("Interrupted = %+v; want T", in)
	}
	// Resume: replay the last messages (as a loop that cannot know what was
	// committed would) and continue; nothing is duplicated.
	next := rec.NextSeq
	for seq := max(0, next-3); seq < next+3; seq++ {
		must(t, s.AppendMessage("T", Message{Seq: seq, Role: "user", Content: crashContent(seq)}))
	}
	flushTest(t, s)
	rec, err = s.LoadTask(ctx, "T")
	must(t, err)
	if len(rec.Messages) != next+3 || rec.NextSeq != next+3 {
		t.Errorf("after resume: %d messages, NextSeq %d; want %d", len(rec.Messages), rec.NextSeq, next+3)
	}
}
