package session

import (
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/tools"
)

// newTestPolicy is a task's policy under approval "ask" whose user answers
// every question with answer.
// perm, when not nil, is the permission service (with its memory) the
// policy shares with others; conv its conversation.
func newTestPolicy(t *testing.T, answer tools.Decision, perm *permission.Service, conv string) (*approvalPolicy, *askPort) {
	t.Helper()
	if perm == nil {
		t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no remembered prefixes
		perm = permission.New(permission.NewStore(""))
	}
	port := &askPort{answer: answer}
	s := Defaults()
	s.Approval = "ask"
	return &approvalPolicy{perm: perm, port: port, root: t.TempDir(), stateDir: t.TempDir(), settings: s, conv: conv,
		task: func() (string, string) { return "t1", "p" }}, port
}

// TestAllowForTaskCoversOnlyTheParsedPrefix: "Allow for this task"
// remembers the parsed command's safe prefix; chained commands, other
// subcommands and interpreters are asked again.
func TestAllowForTaskCoversOnlyTheParsedPrefix(t *testing.T) {
	a, port := newTestPolicy(t, tools.AllowForTask, nil, "")
	ask := func(c string) {
		if d, _ := a.Approve(t.Context(), tools.ApprovalRequest{Tool: "run_command", Command: c}); d == tools.Deny {
			t.Fatalf("denied %q", c)
		}
	}
	for _, c := range []string{"go test ./...", "go test -run X ./pkg", "go version", "echo hello", "python3 --version"} {
		ask(c)
	}
	// Asked: go test, go version, echo, python3 (its answer is not remembered).
	if n := len(port.asked()); n != 4 {
		t.Errorf("asked %d times; want 4: %+v", n, port.asked())
	}
	for _, c := range []string{
		"go version; touch x", "go env GOPATH && touch y", "go test ./...\ntouch pwned", "go test ./... # c\ntouch pwned",
		`echo '{"allowCommands":["sh"]}' > .agentls/settings.json`, "python3 -c 'print(1)'", "go test -exec 'sh -c id' ./...",
		"go vet ./...",
	} {
		before := len(port.asked())
		ask(c)
		if len(port.asked()) != before+1 {
			t.Errorf("%q ran unasked after allow-for-task answers", c)
		}
	}
}

// TestTaskMemoryKeepsSecretsWritesAndToolsApart: a write allowed for the
// task covers every file write (edit_file after write_file) but reads no
// secret; a secret read allowed covers that file only; another tool (an
// MCP tool) is remembered by its name.
func TestTaskMemoryKeepsSecretsWritesAndToolsApart(t *testing.T) {
	a, port := newTestPolicy(t, tools.AllowForTask, nil, "")
	write := tools.ApprovalRequest{Tool: "write_file", Summary: "write a", Path: "a", Effects: tools.WritesFiles}
	edit := tools.ApprovalRequest{Tool: "edit_file", Summary: "edit b", Path: "b", Effects: tools.WritesFiles}
	env := tools.ApprovalRequest{Tool: "read_file", Summary: "read .env", Path: ".env", Secret: true}
	grepEnv := tools.ApprovalRequest{Tool: "grep", Summary: "search .env", Path: ".env", Secret: true}
	pem := tools.ApprovalRequest{Tool: "read_file", Summary: "read k.pem", Path: "k.pem", Secret: true}
	mcpA := tools.ApprovalRequest{Tool: "mcp__gh__create_issue", Summary: "create an issue", Effects: tools.External}
	mcpB := tools.ApprovalRequest{Tool: "mcp__gh__close_issue", Summary: "close an issue", Effects: tools.External}
	for _, req := range []tools.ApprovalRequest{write, edit, env, grepEnv, pem, write, mcpA, mcpA, mcpB} {
		if d, err := a.Approve(t.Context(), req); err != nil || !d.Allows() {
			t.Fatalf("Approve(%s) = %v, %v", req.Summary, d, err)
		}
	}
	var got []string
	for _, q := range port.asked() {
		got = append(got, q.Title)
	}
	want := []string{"write a", "read .env", "read k.pem", "create an issue", "close an issue"}
	if len(got) != len(want) {
		t.Fatalf("questions %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("question %d = %q; want %q", i, got[i], want[i])
		}
	}
}

// TestRejectAlwaysHoldsForTheConversation: "reject always" denies the
// same command prefix (or the same tool and path) without asking, in the
// task and in the tasks that share its conversation, not in others.
func TestRejectAlwaysHoldsForTheConversation(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	perm := permission.New(permission.NewStore(""))
	a, port := newTestPolicy(t, tools.DenyAlways, perm, "c1")
	run := func(p *approvalPolicy, c string) tools.Decision {
		d, err := p.Approve(t.Context(), tools.ApprovalRequest{Tool: "run_command", Command: c, Summary: c})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := run(a, "go test ./..."); d != tools.Deny {
		t.Fatalf("reject always answered %v to the tool; want Deny", d)
	}
	if d := run(a, "go test -run X ./..."); d != tools.Deny || len(port.asked()) != 1 {
		t.Errorf("same prefix: %v after %d questions; want Deny without a second question", d, len(port.asked()))
	}
	if run(a, "go vet ./..."); len(port.asked()) != 2 {
		t.Errorf("another prefix was not asked")
	}
	followUp, fport := newTestPolicy(t, tools.AllowOnce, perm, "c1")
	if d := run(followUp, "go test ./x"); d != tools.Deny || len(fport.asked()) != 0 {
		t.Errorf("follow-up: %v after %d questions; want Deny unasked", d, len(fport.asked()))
	}
	other, oport := newTestPolicy(t, tools.AllowOnce, perm, "c2")
	if d := run(other, "go test ./x"); d != tools.AllowOnce || len(oport.asked()) != 1 {
		t.Errorf("another conversation: %v after %d questions; want asked and allowed", d, len(oport.asked()))
	}
}

// TestConversationIsSharedByFollowUps: the host gives a follow-up (and a
// resume) the denials of the task it continues, and a new task its own.
func TestConversationIsSharedByFollowUps(t *testing.T) {
	h := New(Defaults(), Options{})
	first := h.conversation(agent.TaskSpec{})
	h.convs["T1"] = first
	if got := h.conversation(agent.TaskSpec{FollowUp: "T1"}); got != first {
		t.Error("a follow-up of T1 has its own denials; want T1's")
	}
	if got := h.conversation(agent.TaskSpec{}); got == first {
		t.Error("a new task shares T1's denials")
	}
}
