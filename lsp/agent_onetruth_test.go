package lsp_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// raceRounds is how many command-then-read rounds TestReadAfterCommandSeesTheDisk
// runs: every one must read the command's text.
const raceRounds = 20

// TestReadAfterCommandSeesTheDisk: a command rewrites c.go, which the
// editor holds open and clean, and the very next tool call reads it. The
// read returns what the command wrote in every round, whether the editor
// never reloads the buffer or reloads it from its own file watcher at a
// moment agentls does not know (the race issue 28 saw in 4 of 5 runs).
func TestReadAfterCommandSeesTheDisk(t *testing.T) {
	files := map[string]string{"c.go": "package a\n\nconst V = \"fresh-0\"\n"}
	for i := 1; i <= raceRounds; i++ {
		files[fmt.Sprintf("next/%d.txt", i)] = fmt.Sprintf("package a\n\nconst V = \"fresh-%d\"\n", i)
	}
	var turns []fakemodel.Turn
	for i := 1; i <= raceRounds; i++ {
		cmd := call(fmt.Sprintf("cmd%d", i), "run_command", fmt.Sprintf(`{"command":"cp next/%d.txt c.go && echo round-%d-done"}`, i, i))
		m := &fakemodel.Match{LastToolResult: "const V"}
		if i == 1 {
			m = &fakemodel.Match{Request: 1}
		}
		turns = append(turns,
			fakemodel.Turn{Match: m, ToolCalls: []fakemodel.ToolCall{cmd}},
			fakemodel.Turn{Match: &fakemodel.Match{LastToolResult: fmt.Sprintf("round-%d-done", i)},
				ToolCalls: []fakemodel.ToolCall{call(fmt.Sprintf("read%d", i), "read_file", `{"path":"c.go"}`)}})
	}
	turns = append(turns, fakemodel.Turn{Match: &fakemodel.Match{LastToolResult: "const V"}, Text: "Done.", FinishReason: "stop"})

	for _, tc := range []struct {
		name   string
		reload bool // the editor reloads the buffer when the file changes on disk
	}{
		{"editor never reloads", false},
		{"editor reloads from its own watcher", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentSession(t, turns, files, lsptest.Config{ApplyEdit: true}, agentOpts{settings: map[string]any{"maxTurns": 3 * raceRounds}})
			a.open(t, "c.go")
			if tc.reload {
				stop := make(chan struct{})
				done := make(chan struct{})
				go reloadOnDiskChange(a, a.path("c.go"), stop, done)
				defer func() { close(stop); <-done }()
			}
			r, err := a.run(t, map[string]any{"prompt": "bump V and show c.go, 20 times", "mode": "edit"})
			if err != nil {
				t.Fatal(err)
			}
			reqs := a.model.Requests()
			last := string(reqs[len(reqs)-1].Body)
			fresh := 0
			for i := 1; i <= raceRounds; i++ {
				if strings.Contains(last, fmt.Sprintf(`const V = \"fresh-%d\"`, i)) {
					fresh++
				}
			}
			t.Logf("read after command returned the command's text in %d of %d rounds", fresh, raceRounds)
			if fresh != raceRounds || r.Status != "completed" {
				t.Errorf("fresh reads: %d of %d (status %s); want all", fresh, raceRounds, r.Status)
			}
		})
	}
}

// reloadOnDiskChange is an editor's file watcher with autoread: when the
// file on disk differs from the clean buffer, the buffer is reloaded
// (didChange with the whole text it reads then), at a moment of its own.
func reloadOnDiskChange(a *agentSession, name string, stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		disk, err := readFileErr(name)
		text, _, ok := a.c.Document(name)
		if err != nil || !ok || disk == text {
			continue
		}
		// The editor gets to it when its own timer fires (Neovim's
		// checktime, VS Code's watcher debounce): up to 20 ms later here.
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(rand.IntN(20)) * time.Millisecond):
		}
		if disk, err = readFileErr(name); err == nil {
			_, _ = a.c.ChangeDocument(context.Background(), name, lsptest.Change{Text: disk})
		}
	}
}
