package lsp_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestExitCancelsTasksAndKillsCommands: when the connection ends (shutdown,
// exit) while a task runs a command, the task is cancelled, the command's
// process is killed and Serve returns only after the task has ended.
func TestExitCancelsTasksAndKillsCommands(t *testing.T) {
	a := newAgentSession(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"echo started > pid.txt; exec sleep 30.7130"}`)}},
		{Text: "Done.", FinishReason: "stop", Times: -1},
	}, goFiles, lsptest.Config{WorkDoneProgress: true}, agentOpts{})
	go func() {
		_, _, _ = a.c.ExecuteCommand(ctx(t), lsp.CommandRun, map[string]any{"prompt": "sleep a while", "mode": "edit"})
	}()
	if !waitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(a.path("pid.txt"))
		return err == nil && strings.TrimSpace(string(b)) == "started" && len(sleepers()) > 0
	}) {
		t.Fatal("the command never started")
	}
	if err := a.c.Shutdown(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_ = a.c.Exit(ctx(t))
	select {
	case err := <-a.served:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if list := a.svc.TaskList(); len(list) != 1 || list[0].State != "cancelled" {
		t.Errorf("tasks = %+v; want one cancelled", list)
	}
	if !waitFor(3*time.Second, func() bool { return len(sleepers()) == 0 }) {
		t.Errorf("the command's processes %v are still alive after exit", sleepers())
	}
}

// sleepers are the pids of the test command's process, found by its
// command line: inside the sandbox's PID namespace the shell's $$ is not
// the host's pid.
func sleepers() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") == "sleep 30.7130" {
			out = append(out, pid)
		}
	}
	return out
}
