package lsp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp/lsptest"
)

// raceRounds is how many command-then-read rounds TestReadAfterCommandSeesTheDisk
// runs: every one must read the command's text.
const raceRounds = 20

// TestReadAfterCommandSeesTheDisk: a command rewrites c.go (sed -i: a
// new file renamed over it, so an editor never reads it half written), which the
// editor holds open and clean, and the very next tool call reads it. The
// read returns what the command wrote in every round, whether the editor
// never reloads the buffer or reloads it from its own file watcher at a
// moment agentls does not know (with a plain client, 4 of 5 reads right
// after a command returned the old buffer text).
func TestReadAfterCommandSeesTheDisk(t *testing.T) {
	files := map[string]string{"c.go": "package a\n\nconst V = \"fresh-0\"\n"}
	var turns []fakemodel.Turn
	for i := 1; i <= raceRounds; i++ {
		cmd := call(fmt.Sprintf("cmd%d", i), "run_command", fmt.Sprintf(`{"command":"sed -i s/fresh-%d/fresh-%d/ c.go && echo round-%d-done"}`, i-1, i, i))
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
			// 40 tool calls, 20 of them sandboxed commands: more than the
			// usual test context allows under -race on a loaded machine.
			long, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			r, err := a.c.Run(t, long, map[string]any{"prompt": "bump V and show c.go, 20 times", "mode": "edit"})
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
				t.Errorf("fresh reads: %d of %d (status %s); want all; last request:\n%s", fresh, raceRounds, r.Status, tail(last, 3000))
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

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// editThenCommandTurns: task A edits the open a.go and ends, its edit unsaved in
// the buffer; task B runs a command that reads a.go from disk (as go vet
// would), with commandB.
func editThenCommandTurns(commandB string) []fakemodel.Turn {
	return []fakemodel.Turn{
		{Match: &fakemodel.Match{LastUser: "make Foo say hi"}, ToolCalls: []fakemodel.ToolCall{call("a1", "edit_file", `{"path":"a.go","old_string":"\"hello\"","new_string":"\"hi\""}`)}},
		{Match: &fakemodel.Match{LastToolResult: "edited a.go"}, Text: "Foo says hi.", FinishReason: "stop"},
		{Match: &fakemodel.Match{LastUser: "check the package"}, ToolCalls: []fakemodel.ToolCall{call("b1", "run_command", `{"command":"`+commandB+`"}`)}},
		{Match: &fakemodel.Match{LastToolResult: "exit code"}, Delay: slow, Text: "Checked.", FinishReason: "stop"},
	}
}

// lastToolResultOf is the text of the last tool result the model was sent
// (decoded), from the body of the model's last request.
func lastToolResultOf(t *testing.T, a *agentSession) string {
	t.Helper()
	reqs := a.model.Requests()
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
		t.Fatal(err)
	}
	for i := len(body.Messages) - 1; i >= 0; i-- {
		if body.Messages[i].Role == "tool" {
			return body.Messages[i].Content
		}
	}
	t.Fatal("no tool result in the last model request")
	return ""
}

// TestCommandSeesAnEarlierTasksUnsavedEdit: task A leaves its edit of
// a.go unsaved in the editor's buffer; task B runs a command that reads
// a.go from disk. The buffer holds only agent edits (of another task), so
// it is saved before the command: by the editor when it answers
// agentls/saveDocuments, else by agentls. The command prints the edit.
func TestCommandSeesAnEarlierTasksUnsavedEdit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plugin bool
	}{
		{"client with the plugin", true},
		{"plain client", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentSession(t, editThenCommandTurns("grep -n return a.go"), goFiles, lsptest.Config{ApplyEdit: true, SaveDocuments: tc.plugin, WorkDoneProgress: true}, agentOpts{})
			before := a.open(t, "a.go")
			r, err := a.run(t, map[string]any{"prompt": "make Foo say hi", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("task A: %+v, %v", r, err)
			}
			if b := readFile(t, a.path("a.go")); b != before {
				t.Fatalf("task A saved a.go (%q): the test needs its edit unsaved", b)
			}
			if text, _, _ := a.c.Document(a.path("a.go")); !strings.Contains(text, `"hi"`) {
				t.Fatalf("a.go in the editor = %q; want task A's edit", text)
			}
			r, err = a.run(t, map[string]any{"prompt": "check the package", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("task B: %+v, %v", r, err)
			}
			out := lastToolResultOf(t, a)
			if !strings.Contains(out, `4:func Foo() string { return "hi" }`) {
				t.Errorf("task B's command did not see task A's edit:\n%s", out)
			}
			if strings.Contains(out, "unsaved changes") {
				t.Errorf("the model was told of the user's unsaved changes; there are none:\n%s", out)
			}
			if b := readFile(t, a.path("a.go")); !strings.Contains(b, `"hi"`) {
				t.Errorf("a.go on disk after task B = %q; want task A's edit saved", b)
			}
			if saves := a.c.Snapshot().SaveRequests; tc.plugin && len(saves) != 1 {
				t.Errorf("save requests = %v; want one, for a.go", saves)
			}
		})
	}
}

// TestUserUnsavedBufferIsNamed: the user has unsaved text in b.go. A
// command that only reads runs on the saved copy, and the model (the tool
// result), the user (progress) and the report say so; a command that
// rewrites b.go on disk under the user's text is a conflict, named the
// same three ways, and neither text is dropped.
func TestUserUnsavedBufferIsNamed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		command  string
		model    string // in the tool result
		progress string // in a progress report
		report   string // in the task report
		disk     string // b.go on disk afterwards
	}{
		{
			name:     "command reads",
			command:  "cat b.go",
			model:    "b.go has unsaved changes the user made in the editor; agentls never saves the user's text, so the command ran on the saved copy",
			progress: "b.go has unsaved changes of yours; `cat b.go` ran on the saved copy",
			report:   "- b.go has unsaved changes of yours: `cat b.go` ran on the saved copy, without them.",
			disk:     goFiles["b.go"],
		},
		{
			name:     "command rewrites the file",
			command:  "sed -i 's/return 1/return 2/' b.go",
			model:    "conflict: the command changed b.go on disk while the editor holds unsaved changes the user made to it",
			progress: "conflict: `sed -i 's/return 1/return 2/' b.go` changed b.go on disk under your unsaved changes",
			report:   "- **conflict** b.go: `sed -i 's/return 1/return 2/' b.go` changed the file on disk while the editor held your unsaved changes to it",
			disk:     "package a\n\nfunc Bar() int { return 2 }\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentSession(t, []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"`+tc.command+`"}`)}},
				{Match: &fakemodel.Match{LastToolResult: "exit code"}, Delay: slow, Text: "Ran it.", FinishReason: "stop"},
			}, goFiles, lsptest.Config{ApplyEdit: true, SaveDocuments: true, WorkDoneProgress: true}, agentOpts{})
			a.open(t, "b.go")
			typed, err := a.c.ChangeDocument(ctx(t), a.path("b.go"), lsptest.Change{Range: &protocol.Range{}, Text: "// the user's unsaved line\n"})
			if err != nil {
				t.Fatal(err)
			}
			r, err := a.run(t, map[string]any{"prompt": "run it", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("reply = %+v, %v", r, err)
			}
			if out := lastToolResultOf(t, a); !strings.Contains(out, tc.model) {
				t.Errorf("tool result lacks %q:\n%s", tc.model, out)
			}
			st := a.c.Snapshot()
			if p := progressOf(&st, "agentls: run it"); p == nil || !strings.Contains(reportMessages(p), tc.progress) {
				t.Errorf("progress lacks %q: %+v", tc.progress, p)
			}
			if rep := readFile(t, uri.URI(r.Report).FsPath()); !strings.Contains(rep, "## Unsaved buffers") || !strings.Contains(rep, tc.report) {
				t.Errorf("report lacks %q:\n%s", tc.report, rep)
			}
			if b := readFile(t, a.path("b.go")); b != tc.disk {
				t.Errorf("b.go on disk = %q; want %q", b, tc.disk)
			}
			if text, _, _ := a.c.Document(a.path("b.go")); text != typed {
				t.Errorf("b.go in the editor = %q; want the user's text kept %q", text, typed)
			}
			if n := len(st.SaveRequests); n != 0 {
				t.Errorf("%d save requests; want none (the buffer holds the user's text)", n)
			}
		})
	}
}
