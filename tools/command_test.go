package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLongOutputKeepsTail: 10,000 lines show the last ones, a marker of
// what was cut, and the path of the full log, which read_file can read.
func TestLongOutputKeepsTail(t *testing.T) {
	_, ws := fixture(t, nil)
	r := newReg(t, Env{Workspace: ws})
	res := call(t, r, "run_command", map[string]any{"command": "seq 1 10000"})
	out := res.Data.(*CommandOutput)
	if res.IsError || !strings.Contains(res.Text, "\n9999\n10000\n") || !strings.Contains(res.Text, "\n1\n2\n") {
		t.Fatalf("run_command seq: head or tail missing:\n%s", res.Text)
	}
	if !strings.Contains(res.Text, "lines (") || !strings.Contains(res.Text, "cut; full output: .agentls/commands/") || out.LogPath == "" {
		t.Fatalf("no cut marker or log path:\n%s", res.Text)
	}
	if len(res.Text) > 4000 {
		t.Errorf("the model reads %d bytes for 10,000 lines; want a short head and tail", len(res.Text))
	}
	log := call(t, r, "read_file", map[string]any{"path": out.LogPath, "offset": 10000, "limit": 5})
	if log.IsError || !strings.Contains(log.Text, "\t9998\n") {
		t.Errorf("read_file of the full log %s = %s", out.LogPath, log.Text)
	}
	if !strings.Contains(res.Evidence, "$ seq 1 10000") || !strings.Contains(res.Evidence, "10000") {
		t.Errorf("evidence lacks the command or its real output: %q", res.Evidence)
	}
}

// TestNonZeroExitShowsStdout: exit 1 with a warning on stderr still shows
// the answer on stdout, each stream apart.
func TestNonZeroExitShowsStdout(t *testing.T) {
	_, ws := fixture(t, nil)
	r := newReg(t, Env{Workspace: ws})
	res := call(t, r, "run_command", map[string]any{"command": "echo answer=42; echo 'warning: permission denied' >&2; exit 1"})
	out := res.Data.(*CommandOutput)
	if !res.IsError || out.ExitCode != 1 || out.Stdout != "answer=42\n" || out.Stderr != "warning: permission denied\n" {
		t.Fatalf("result %+v", out)
	}
	if !strings.Contains(res.Text, "exit code 1") || !strings.Contains(res.Text, "stdout (1 line, 10 bytes):\nanswer=42") {
		t.Errorf("text:\n%s", res.Text)
	}
}

// TestResultsCarryNameArgsDuration: every result, errors included, names
// its tool, keeps its arguments and duration, and is rendered text.
func TestResultsCarryNameArgsDuration(t *testing.T) {
	_, ws := fixture(t, map[string]string{"a.txt": "line one\nline two\n"})
	r := newReg(t, Env{Workspace: ws})
	calls := map[string]string{
		"list_files": `{}`, "grep": `{"pattern":"line"}`, "read_file": `{"path":"a.txt"}`,
		"edit_file": `{"path":"a.txt","old_string":"one","new_string":"1"}`, "write_file": `{"path":"b.txt","content":"x\ny\n"}`,
		"run_command": `{"command":"echo a; echo b"}`, "update_plan": `{"items":[]}`, "no_such_tool": `{}`, "read_file ": `{"path":1}`,
	}
	for name, args := range calls {
		res := call(t, r, name, args)
		if res.Tool != name || string(res.Args) != args || res.Duration <= 0 {
			t.Errorf("%s: Tool %q Args %s Duration %v", name, res.Tool, res.Args, res.Duration)
		}
		if strings.Contains(res.Text, `\n`) {
			t.Errorf("%s: text holds an escaped newline: %q", name, res.Text)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Errorf("%s: result does not encode: %v", name, err)
		}
	}
	if res := call(t, r, "no_such_tool", `{}`); !res.IsError || !strings.Contains(res.Text, "valid tools: list_files, grep, read_file, edit_file, write_file, run_command, update_plan") {
		t.Errorf("unknown tool = %s", res.Text)
	}
}

// TestFailuresSayWhat: the signal that killed a command is named, and
// a failure shows stderr.
func TestFailuresSayWhat(t *testing.T) {
	_, ws := fixture(t, nil)
	r := newReg(t, Env{Workspace: ws})
	res := call(t, r, "run_command", map[string]any{"command": "echo partial; kill -TERM $$"})
	out := res.Data.(*CommandOutput)
	if !res.IsError || out.Signal != "SIGTERM" || !strings.Contains(res.Text, "killed by SIGTERM") || strings.Contains(res.Text, "null") {
		t.Errorf("signalled command: %+v\n%s", out, res.Text)
	}
	res = call(t, r, "run_command", map[string]any{"argv": []string{"sh", "-c", "echo 'no such table: users' >&2; exit 2"}})
	if !strings.Contains(res.Text, "FAILED: exit code 2") || !strings.Contains(res.Text, "no such table: users") || !strings.Contains(res.Evidence, "no such table") {
		t.Errorf("failure text:\n%s\nevidence %q", res.Text, res.Evidence)
	}
	res = call(t, r, "run_command", map[string]any{"argv": []string{"/nonexistent/prog"}})
	if !res.IsError || !strings.Contains(res.Text, "could not start") {
		t.Errorf("missing program: %s", res.Text)
	}
}

// tagged lists the live (not zombie) processes whose command line holds
// tag, from /proc: commands in their own PID namespace report other pids
// than the host's, so processes are found by what they run.
func tagged(tag string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cl), "\x00", " "), tag) {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if s := string(st); err != nil || strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " Z ") {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// sleepTag is a sleep duration no other process uses, to find survivors.
func sleepTag() string { return fmt.Sprintf("%d", 100000+time.Now().UnixNano()%800000) }

// waitNoSurvivors fails when a process running tag is still alive 10 s
// after the command returned.
func waitNoSurvivors(t *testing.T, tag string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := tagged(tag)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				killGroup(p, true)
			}
			t.Fatalf("%d processes of the command still run: %v", len(left), left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStarted waits until n processes run tag.
func waitStarted(t *testing.T, tag string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(tagged(tag)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d processes started", len(tagged(tag)), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// escapers is a shell line starting, in the background, a plain child, a
// child in a new session (setsid) and one that makes its own process group
// (perl's setpgrp), each running sleep TAG, then sleeping itself.
func escapers(tag string) string {
	return "sleep " + tag + " & setsid sleep " + tag + " & perl -e 'setpgrp(0,0); exec \"sleep\", \"" + tag + "\"' & sleep " + tag
}

// TestNoProcessOutlivesItsCommand: whatever a command started, also in a
// new session or process group, is dead when the command times out, is
// cancelled, is killed at server exit, or ends normally. Checked through
// the process table.
func TestNoProcessOutlivesItsCommand(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	t.Run("timeout", func(t *testing.T) {
		_, ws := fixture(t, nil)
		r := newReg(t, Env{Workspace: ws})
		tag := sleepTag()
		start := time.Now()
		res := call(t, r, "run_command", map[string]any{"command": escapers(tag), "timeout": 1})
		out := res.Data.(*CommandOutput)
		if !out.TimedOut || !res.IsError || !strings.Contains(res.Text, "timed out after 1s") || time.Since(start) > 8*time.Second {
			t.Fatalf("timeout result after %v: %s", time.Since(start), res.Text)
		}
		waitNoSurvivors(t, tag)
	})
	t.Run("cancel", func(t *testing.T) {
		_, ws := fixture(t, nil)
		r := newReg(t, Env{Workspace: ws})
		tag := sleepTag()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan Result)
		go func() {
			res, _ := r.Run(ctx, "run_command", mustJSON(t, map[string]any{"command": escapers(tag)}))
			done <- res
		}()
		waitStarted(t, tag, 4)
		cancel()
		select {
		case res := <-done:
			if out := res.Data.(*CommandOutput); !out.Cancelled {
				t.Errorf("not marked cancelled: %s", res.Text)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("run_command did not return after cancel")
		}
		waitNoSurvivors(t, tag)
	})
	t.Run("server exit", func(t *testing.T) {
		_, ws := fixture(t, nil)
		cmds := NewCommands()
		r := newReg(t, Env{Workspace: ws, Commands: cmds})
		tag := sleepTag()
		done := make(chan Result)
		go func() {
			res, _ := r.Run(context.Background(), "run_command", mustJSON(t, map[string]any{"command": escapers(tag)}))
			done <- res
		}()
		waitStarted(t, tag, 4)
		cmds.KillAll()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("run_command did not return after KillAll")
		}
		waitNoSurvivors(t, tag)
		if res := call(t, r, "run_command", map[string]any{"command": "true"}); !res.IsError || !strings.Contains(res.Text, "shutting down") {
			t.Errorf("command after KillAll: %s", res.Text)
		}
	})
	t.Run("children of a finished command", func(t *testing.T) {
		_, ws := fixture(t, nil)
		r := newReg(t, Env{Workspace: ws})
		tag := sleepTag()
		start := time.Now()
		// The leader ends at once; its children, one holding the output
		// pipe from another session, must not hold the call nor survive.
		res := call(t, r, "run_command", map[string]any{"command": "sleep " + tag + " & setsid sleep " + tag + " & perl -e 'setpgrp(0,0); exec \"sleep\", \"" + tag + "\"' & sleep 0.5; echo leader done"})
		if res.IsError || !strings.Contains(res.Text, "leader done") || time.Since(start) > 8*time.Second {
			t.Fatalf("took %v: %s", time.Since(start), res.Text)
		}
		out := res.Data.(*CommandOutput)
		if out.Leftovers != 3 {
			t.Errorf("Leftovers = %d; want 3 (killed after the command ended)", out.Leftovers)
		}
		waitNoSurvivors(t, tag)
	})
}

func TestRunCommandEnvAndCwd(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret-value")
	t.Setenv("AGENTLS_TOKEN", "agentls-secret")
	t.Setenv("MY_KEY_VAR", "configured-secret")
	t.Setenv("GOFLAGS", "-tags=visible")
	t.Setenv("TMUX", "/tmp/tmux-0/default,1,0")
	_, ws := fixture(t, map[string]string{"sub/x.txt": "x"})
	r := newReg(t, Env{Workspace: ws, SecretEnv: []string{"MY_KEY_VAR"}})
	res := call(t, r, "run_command", map[string]any{"command": "env; pwd; cat < /dev/stdin; echo stdin-closed", "cwd": "sub"})
	for _, secret := range []string{"sk-secret-value", "agentls-secret", "configured-secret"} {
		if strings.Contains(res.Text, secret) {
			t.Errorf("a secret reached the command's environment: %s", secret)
		}
	}
	if strings.Contains(res.Text, "TMUX=") {
		t.Errorf("TMUX reached the command's environment:\n%s", res.Text)
	}
	if !strings.Contains(res.Text, "GOFLAGS=-tags=visible") || !strings.Contains(res.Text, "/sub\n") || !strings.Contains(res.Text, "stdin-closed") || !strings.Contains(res.Text, "(in sub)") {
		t.Errorf("env/cwd/stdin:\n%s", res.Text)
	}
	ap := &fixedApprover{d: Deny}
	r = newReg(t, Env{Workspace: ws, Approver: ap})
	res = call(t, r, "run_command", map[string]any{"cmd": "touch sub/ran"})
	if _, err := os.Stat(filepath.Join(ws.Roots()[0], "sub/ran")); !res.IsError || !strings.Contains(res.Text, "denied") || err == nil || ap.reqs[0].Command != "touch sub/ran" {
		t.Errorf("denied command: %s (ran: %v)", res.Text, err == nil)
	}
}
