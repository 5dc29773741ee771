package session_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/hooks"
)

// hookTask runs one task with the scripted turns and the user's hooks in
// a watched workspace holding files; it returns the outcome, the report,
// the requests the model got, and the host (closed at the end of the
// test).
type hookRun struct {
	out    *session.Outcome
	report string
	model  *fakemodel.Server
	h      *session.Host
	root   string
}

func hookTask(t *testing.T, files map[string]string, hk hooks.Config, kind agent.Kind, turns ...fakemodel.Turn) hookRun {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		writeFile(t, root, name, text)
	}
	srv, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	s := session.Defaults()
	s.BaseURL, s.Model, s.Validate, s.Recordings, s.Approval = srv.URL(), "fake-model", "off", false, "auto"
	s.Hooks = hk
	h := session.New(s, session.Options{Watch: true, DBPath: filepath.Join(t.TempDir(), "agentls.db"), Getenv: func(string) string { return "" }})
	t.Cleanup(h.Close)
	h.SetRoots([]string{root})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := h.Run(ctx, agent.TaskSpec{Kind: kind, Prompt: "do the work"}, &recPort{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(out.Report)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if i := strings.Index(string(report), "## Hooks"); i >= 0 {
		t.Logf("task %s in %s, %d model calls; %s", out.Result.Status, out.Result.Duration.Round(time.Millisecond), out.Result.ModelCalls, report[i:])
	}
	return hookRun{out: out, report: string(report), model: srv, h: h, root: root}
}

func hook(ev hooks.Event, matcher, command string, timeout float64) hooks.Config {
	return hooks.Config{ev: {{Matcher: matcher, Hooks: []hooks.Command{{Type: "command", Command: command, Timeout: timeout}}}}}
}

// lastRequest is the body of the model's last request.
func lastRequest(srv *fakemodel.Server) string {
	reqs := srv.Requests()
	return string(reqs[len(reqs)-1].Body)
}

// blockRM is a PreToolUse hook as people write them for Claude Code: it
// reads the call on stdin and refuses rm with exit code 2.
const blockRM = `input=$(cat); case "$input" in *'"command":"rm '*|*'"command": "rm '*) echo "rm is blocked by policy: move files to trash/ instead" >&2; exit 2;; esac; exit 0`

func TestPreToolUseHookBlocksRm(t *testing.T) {
	r := hookTask(t, map[string]string{"keep.txt": "precious\n"}, hook(hooks.PreToolUse, "run_command", blockRM, 10), agent.KindEdit,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"rm keep.txt"}`}}},
		fakemodel.Turn{Match: &fakemodel.Match{LastToolResult: "rm is blocked by policy"}, Text: "I could not remove keep.txt: a hook blocks rm."},
	)
	if got := readFile(t, r.root, "keep.txt"); got != "precious\n" {
		t.Fatalf("keep.txt = %q; want it untouched (the hook blocks rm)", got)
	}
	body := lastRequest(r.model)
	if !strings.Contains(body, "A PreToolUse hook blocked this call") || !strings.Contains(body, "move files to trash/ instead") {
		t.Errorf("the model was not given the hook's stderr; last request:\n%s", body)
	}
	if !strings.Contains(r.report, "## Hooks") || !strings.Contains(r.report, "| PreToolUse | run_command |") || !strings.Contains(r.report, "| 2 |") || !strings.Contains(r.report, "blocked") {
		t.Errorf("the report does not list the blocking run with its exit code:\n%s", r.report)
	}
}

func TestPostToolUseFormatterJoinsChangesAndUndo(t *testing.T) {
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Fatalf("gofmt is required by this test (it comes with Go): %v", err)
	}
	// The formatter reads the file's path from tool_input, like a
	// Claude Code formatting hook.
	const format = `f=$(sed -n 's/.*"path": *"\([^"]*\)".*/\1/p'); gofmt -w "$CLAUDE_PROJECT_DIR/$f"`
	const original = "package a\n\nfunc A() int { return 1 }\n"
	const messy = "package a\nfunc A()   int {\nreturn 2 }\n"
	const formatted = "package a\n\nfunc A() int {\n\treturn 2\n}\n"
	r := hookTask(t, map[string]string{"a.go": original}, hook(hooks.PostToolUse, "write_file|edit_file", format, 20), agent.KindEdit,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c0", Name: "read_file", Arguments: `{"path":"a.go"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "write_file", Arguments: fakemodel.Args(`{"path":"a.go","content":"` + strings.ReplaceAll(messy, "\n", `\n`) + `"}`)}}},
		fakemodel.Turn{Text: "A now returns 2."},
	)
	if got := readFile(t, r.root, "a.go"); got != formatted {
		t.Fatalf("a.go = %q; want the formatter's output %q", got, formatted)
	}
	if !strings.Contains(lastRequest(r.model), "files the PostToolUse hook changed") {
		t.Errorf("the model was not told what the hook changed")
	}
	var diff string
	for _, f := range r.out.Result.Files {
		if f.Path == "a.go" {
			diff = f.Diff
		}
	}
	if !strings.Contains(diff, "+\treturn 2") {
		t.Errorf("the task's change of a.go does not include the formatter's change:\n%s", diff)
	}
	if !strings.Contains(r.report, "| PostToolUse | write_file |") {
		t.Errorf("the report does not list the formatter run:\n%s", r.report)
	}
	ws, err := r.h.Workspace(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.h.Undo(context.Background(), r.out.Result.TaskID, ws.DiskEditor()); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if got := readFile(t, r.root, "a.go"); got != original {
		t.Errorf("a.go after undo = %q; want %q (the edit and the formatter's change undone)", got, original)
	}
}

func TestStopHookSendsTheAgentBackOnce(t *testing.T) {
	// The hook always blocks: agentls sends the agent back once and then
	// lets it stop (stop_hook_active is true the second time).
	const stop = `input=$(cat); echo "$input" > stop-input.json; echo "run the linter before you finish" >&2; exit 2`
	r := hookTask(t, map[string]string{"a.txt": "a\n"}, hook(hooks.Stop, "", stop, 10), agent.KindAsk,
		fakemodel.Turn{Text: "All done."},
		fakemodel.Turn{Match: &fakemodel.Match{LastUser: "run the linter before you finish"}, Text: "Linted: all done."},
	)
	res := r.out.Result
	if res.Status != agent.StateCompleted || res.ModelCalls != 2 || res.Answer != "Linted: all done." {
		t.Fatalf("task %s after %d calls, answer %q; want completed after 2 (sent back once)", res.Status, res.ModelCalls, res.Answer)
	}
	if n := strings.Count(r.report, "| Stop |"); n != 2 || !strings.Contains(r.report, "block ignored: the agent was sent back once already") {
		t.Errorf("the report lists %d Stop runs; want 2, the second's block ignored:\n%s", n, r.report)
	}
	in := readFile(t, r.root, "stop-input.json")
	for _, want := range []string{`"hook_event_name":"Stop"`, `"stop_hook_active":true`, `"task_id":"` + res.TaskID + `"`, `"cwd":"` + r.root + `"`} {
		if !strings.Contains(in, want) {
			t.Errorf("the second Stop hook's input lacks %s:\n%s", want, in)
		}
	}
}

func TestHookThatHangsIsKilledAtItsTimeout(t *testing.T) {
	start := time.Now()
	r := hookTask(t, map[string]string{"a.txt": "a\n"}, hook(hooks.PreToolUse, "*", "sleep 300", 1), agent.KindAsk,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
		fakemodel.Turn{Match: &fakemodel.Match{LastToolResult: "a"}, Text: "a.txt holds a."},
	)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the task took %s; the hook should have been killed after 1 s", took)
	}
	if r.out.Result.Status != agent.StateCompleted {
		t.Fatalf("task %s: %s; want completed (a hook that times out is ignored)", r.out.Result.Status, r.out.Result.Error)
	}
	if !strings.Contains(r.report, "killed at its timeout of 1s") {
		t.Errorf("the report does not say the hook was killed at its timeout:\n%s", r.report)
	}
}

func TestUserPromptSubmitHookRefusesAPrompt(t *testing.T) {
	root := t.TempDir()
	s := session.Defaults()
	s.BaseURL, s.Model, s.Recordings = "http://127.0.0.1:1/v1", "fake-model", false
	s.Hooks = hook(hooks.UserPromptSubmit, "", `grep -q password && { echo "no passwords in prompts" >&2; exit 2; }; exit 0`, 10)
	h := session.New(s, session.Options{DBPath: filepath.Join(t.TempDir(), "agentls.db"), Getenv: func(string) string { return "" }})
	defer h.Close()
	h.SetRoots([]string{root})
	_, err := h.Start(context.Background(), agent.TaskSpec{Kind: agent.KindAsk, Prompt: "my password is hunter2"}, &recPort{})
	if err == nil || !strings.Contains(err.Error(), "no passwords in prompts") {
		t.Fatalf("Start = %v; want the hook's refusal", err)
	}
	if n := len(h.Tasks()); n != 0 {
		t.Errorf("%d tasks started; want none", n)
	}
}

// denyPort answers every question no.
type denyPort struct{ recPort }

func (p *denyPort) AskUser(context.Context, permission.Request) (tools.Decision, error) {
	return tools.Deny, nil
}

func TestHookAddedAfterStartUpNeedsConsent(t *testing.T) {
	// A workspace's editor settings (didChangeConfiguration) try to add a
	// hook: without the user's yes it never runs.
	root := t.TempDir()
	writeFile(t, root, "a.txt", "a\n")
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
		{Text: "a."},
		{ToolCalls: []fakemodel.ToolCall{{ID: "c2", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
		{Text: "a, again."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := session.Defaults()
	s.BaseURL, s.Model, s.Validate, s.Recordings = srv.URL(), "fake-model", "off", false
	h := session.New(s, session.Options{DBPath: filepath.Join(t.TempDir(), "agentls.db"), Getenv: func(string) string { return "" }})
	defer h.Close()
	h.SetRoots([]string{root})
	shipped, problems := s.Apply([]byte(`{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo pwned > pwned.txt"}]}]}}`))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	h.SetSettings(shipped)
	out, err := h.Run(context.Background(), agent.TaskSpec{Kind: agent.KindAsk, Prompt: "what is in a.txt?"}, &denyPort{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "pwned.txt")); err == nil {
		t.Fatalf("the hook a workspace setting added ran without consent")
	}
	if out.Result.Status != agent.StateCompleted {
		t.Errorf("task %s: %s", out.Result.Status, out.Result.Error)
	}
	// With the user's yes, the same hook runs.
	if _, err := h.Run(context.Background(), agent.TaskSpec{Kind: agent.KindAsk, Prompt: "what is in a.txt?"}, &recPort{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, root, "pwned.txt"); got != "pwned\n" {
		t.Errorf("after consent the hook wrote %q; want it run", got)
	}
}

func readFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSessionStartHookRunsOnceAndJoinsThePrompt(t *testing.T) {
	root := t.TempDir()
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Match: &fakemodel.Match{LastUser: "Context from the user's hooks:\nbranch: main, 3 open issues"}, Text: "Noted."},
		{Text: "Second task."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := session.Defaults()
	s.BaseURL, s.Model, s.Validate, s.Recordings = srv.URL(), "fake-model", "off", false
	s.Hooks = hook(hooks.SessionStart, "startup", `echo "branch: main, 3 open issues"`, 10)
	h := session.New(s, session.Options{DBPath: filepath.Join(t.TempDir(), "agentls.db"), Getenv: func(string) string { return "" }})
	defer h.Close()
	h.SetRoots([]string{root})
	for i, want := range []string{"Noted.", "Second task."} {
		out, err := h.Run(context.Background(), agent.TaskSpec{Kind: agent.KindAsk, Prompt: "what now?"}, &recPort{})
		if err != nil || out.Result.Answer != want {
			t.Fatalf("task %d: %+v, %v; want %q", i+1, out.Result, err, want)
		}
		report, _ := os.ReadFile(out.Report)
		if ran := strings.Contains(string(report), "| SessionStart |"); ran != (i == 0) {
			t.Errorf("task %d: SessionStart in the report: %v; want it run at the first task only", i+1, ran)
		}
	}
}
