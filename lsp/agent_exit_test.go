package lsp_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
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
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"echo $$ > pid.txt; exec sleep 30"}`)}},
		{Text: "Done.", FinishReason: "stop", Times: -1},
	}, goFiles, lsptest.Config{WorkDoneProgress: true}, agentOpts{})
	go func() {
		_, _, _ = a.c.ExecuteCommand(ctx(t), lsp.CommandRun, map[string]any{"prompt": "sleep a while", "mode": "edit"})
	}()
	var pid int
	if !waitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(a.path("pid.txt"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
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
	if !waitFor(3*time.Second, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH }) {
		t.Errorf("process %d still alive after exit", pid)
	}
}
