package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentls/agentls/tools"
)

// recAsker records the requests it is asked and answers each with answer.
type recAsker struct {
	answer tools.Decision
	mu     sync.Mutex
	asked  []Request
}

func (a *recAsker) AskUser(_ context.Context, r Request) (tools.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	return a.answer, nil
}

func (a *recAsker) n() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

// mcpRequest is a question about root's .mcp.json of content key, asked by
// task: a plain yes holds for yes.
func mcpRequest(task, root, key string, yes Scope) Request {
	return Request{Kind: KindMCPFile, TaskID: task, Root: root, Title: "start the servers", Always: ".mcp.json",
		NS: NSMCPFile, Key: key, Yes: yes}
}

// ask asks r through svc and fails the test on an error.
func ask(t *testing.T, svc *Service, r Request, a Asker) tools.Decision {
	t.Helper()
	d, err := svc.Ask(context.Background(), r, a)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestScopeOnceRemembersNothing(t *testing.T) {
	svc := New(NewStore(t.TempDir()))
	a := &recAsker{answer: tools.AllowOnce}
	for range 2 {
		if d := ask(t, svc, mcpRequest("t1", "/r", "h1", Once), a); d != tools.AllowOnce {
			t.Fatalf("answer %v; want AllowOnce", d)
		}
	}
	if a.n() != 2 {
		t.Errorf("asked %d times; want 2 (a once answer is not kept)", a.n())
	}
}

func TestScopeTaskHoldsForTheTaskOnly(t *testing.T) {
	svc := New(NewStore(t.TempDir()))
	a := &recAsker{answer: tools.AllowForTask}
	ask(t, svc, mcpRequest("t1", "/r", "h1", Once), a)
	if d := ask(t, svc, mcpRequest("t1", "/r", "h1", Once), a); !d.Allows() || a.n() != 1 {
		t.Errorf("same task: %v after %d questions; want allowed unasked", d, a.n())
	}
	ask(t, svc, mcpRequest("t2", "/r", "h1", Once), a)
	if a.n() != 2 {
		t.Errorf("another task was not asked (%d questions)", a.n())
	}
}

func TestScopeSessionHoldsUntilRestartForTheRoot(t *testing.T) {
	dir := t.TempDir()
	svc := New(NewStore(dir))
	a := &recAsker{answer: tools.AllowOnce}
	ask(t, svc, mcpRequest("t1", "/r", "h1", Session), a)
	if d := ask(t, svc, mcpRequest("t2", "/r", "h1", Session), a); !d.Allows() || a.n() != 1 {
		t.Errorf("another task, same root: %v after %d questions; want allowed unasked", d, a.n())
	}
	ask(t, svc, mcpRequest("t2", "/other", "h1", Session), a)
	if a.n() != 2 {
		t.Error("another root was not asked")
	}
	// A no holds for the session too, when the request says so.
	no := &recAsker{answer: tools.Deny}
	r := mcpRequest("t3", "/r", "h2", Session)
	r.No = Session
	ask(t, svc, r, no)
	if d := ask(t, svc, r, no); d != tools.Deny || no.n() != 1 {
		t.Errorf("after a session no: %v after %d questions; want denied unasked", d, no.n())
	}
	// A restart (a new store over the same folder) forgets the session.
	restarted := New(NewStore(dir))
	ask(t, restarted, mcpRequest("t4", "/r", "h1", Session), a)
	if a.n() != 3 {
		t.Error("a session answer outlived the restart")
	}
	if _, err := os.Stat(filepath.Join(dir, ApprovedMCPName)); !os.IsNotExist(err) {
		t.Errorf("a session answer was written to disk: %v", err)
	}
}

func TestScopeRootIsKeptOnDiskForThatRoot(t *testing.T) {
	dir := t.TempDir()
	a := &recAsker{answer: tools.AllowAlways}
	ask(t, New(NewStore(dir)), mcpRequest("t1", "/r", "h1", Session), a)
	// The file is the one earlier versions wrote: root -> hashes.
	var f rootsFile
	b, err := os.ReadFile(filepath.Join(dir, ApprovedMCPName))
	if err != nil || json.Unmarshal(b, &f) != nil || !slices.Equal(f.Roots["/r"], []string{"h1"}) {
		t.Fatalf("%s = %s (%v); want {\"roots\":{\"/r\":[\"h1\"]}}", ApprovedMCPName, b, err)
	}
	restarted := New(NewStore(dir))
	if d := ask(t, restarted, mcpRequest("t2", "/r", "h1", Session), a); !d.Allows() || a.n() != 1 {
		t.Errorf("after a restart: %v after %d questions; want allowed unasked", d, a.n())
	}
	ask(t, restarted, mcpRequest("t2", "/other", "h1", Session), a)
	if a.n() != 2 {
		t.Error("another root was not asked")
	}
	// "Always" is offered only when the request names what it keeps.
	r := mcpRequest("t3", "/r", "h9", Once)
	r.Always = ""
	if d := ask(t, restarted, r, a); d != tools.AllowOnce {
		t.Errorf("always without an offer = %v; want AllowOnce", d)
	}
	if keys, _ := restarted.Store.Keys(Root, "/r", NSMCPFile, true); slices.Contains(keys, "h9") {
		t.Error("an always not offered was kept")
	}
}

// TestScopeRootReadsTheCommandsFileUsersHave: a command prefix allowed
// always by an earlier version (allowed-commands.json, as it wrote it)
// is allowed unasked in that root and asked in another.
func TestScopeRootReadsTheCommandsFileUsersHave(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, AllowedCommandsName), []byte(`{"roots": {"/r": ["go test"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := New(NewStore(dir))
	a := &recAsker{answer: tools.Deny}
	run := func(root, cmd string) tools.Decision {
		d, err := svc.Decide(context.Background(), Request{Kind: KindTool, TaskID: "t1", Root: root, Tool: "run_command", Command: cmd, Title: cmd}, Rules{Approval: "ask"}, a)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := run("/r", "go test ./..."); !d.Allows() || a.n() != 0 {
		t.Errorf("kept prefix: %v after %d questions; want allowed unasked", d, a.n())
	}
	if d := run("/other", "go test ./..."); d != tools.Deny || a.n() != 1 {
		t.Errorf("another root: %v after %d questions; want asked", d, a.n())
	}
	if d := run("/r", "go test ./... && rm -rf /"); d != tools.Deny || a.n() != 2 {
		t.Errorf("a chained command: %v after %d questions; want asked", d, a.n())
	}
}

func TestScopeAlwaysHoldsInEveryRoot(t *testing.T) {
	dir := t.TempDir()
	if err := New(NewStore(dir)).Store.Remember(Always, "", NSCommand, "go vet", true); err != nil {
		t.Fatal(err)
	}
	svc := New(NewStore(dir)) // after a restart
	a := &recAsker{answer: tools.Deny}
	for _, root := range []string{"/r", "/other"} {
		d, err := svc.Decide(context.Background(), Request{Kind: KindTool, TaskID: "t1", Root: root, Tool: "run_command", Command: "go vet ./...", Title: "vet"}, Rules{Approval: "ask"}, a)
		if err != nil || !d.Allows() {
			t.Errorf("root %s: %v, %v; want allowed unasked", root, d, err)
		}
	}
	if a.n() != 0 {
		t.Errorf("asked %d times; want none", a.n())
	}
	if err := svc.Store.Remember(Always, "", NSCommand, "rm", false); err == nil {
		t.Error("a refusal was kept on disk")
	}
}

// TestRejectAlwaysHoldsForTheConversation: DenyAlways denies the same
// prefix unasked in every task of the conversation, not in another.
func TestRejectAlwaysHoldsForTheConversation(t *testing.T) {
	svc := New(NewStore(t.TempDir()))
	a := &recAsker{answer: tools.DenyAlways}
	req := func(task, conv string) Request {
		return Request{Kind: KindTool, TaskID: task, Conversation: conv, Tool: "run_command", Command: "go test ./...", Title: "test"}
	}
	for _, r := range []Request{req("t1", "c1"), req("t2", "c1")} {
		if d, _ := svc.Decide(context.Background(), r, Rules{Approval: "ask"}, a); d != tools.Deny {
			t.Fatalf("%s: %v; want Deny", r.TaskID, d)
		}
	}
	if a.n() != 1 {
		t.Errorf("asked %d times in one conversation; want 1", a.n())
	}
	svc.Decide(context.Background(), req("t3", "c2"), Rules{Approval: "ask"}, a)
	if a.n() != 2 {
		t.Error("another conversation was not asked")
	}
}

// TestDecideHandsTheToolsPreviewToTheFace: what the face renders is the
// request the tool made, preview and command untouched.
func TestDecideHandsTheToolsPreviewToTheFace(t *testing.T) {
	svc := New(NewStore(t.TempDir()))
	a := &recAsker{answer: tools.AllowOnce}
	pv := []tools.FileChange{{Path: "x.txt", Before: "a b", After: "ab c"}}
	r := FromTool(tools.ApprovalRequest{Tool: "edit_file", Effects: tools.WritesFiles, Summary: "edit x.txt", Path: "x.txt", Preview: pv})
	if d, err := svc.Decide(context.Background(), r, Rules{Approval: "ask"}, a); err != nil || d != tools.AllowOnce {
		t.Fatalf("Decide = %v, %v", d, err)
	}
	if got := a.asked[0]; len(got.Preview) != 1 || got.Preview[0] != pv[0] || got.Path() != "x.txt" {
		t.Errorf("the face was asked %+v; want the tool's preview", got)
	}
}

// silentAsker never answers: each question times out (ErrNoAnswer), or
// answers after it answered once when answers is set.
type silentAsker struct {
	recAsker
	answers  bool
	silenced int
}

func (a *silentAsker) AskUser(ctx context.Context, r Request) (tools.Decision, error) {
	a.recAsker.AskUser(ctx, r)
	if a.answers && a.n() == 1 {
		return tools.AllowOnce, nil
	}
	return tools.Deny, fmt.Errorf("no answer within 1s: %w", ErrNoAnswer)
}

func (a *silentAsker) Silenced(context.Context) { a.silenced++ }

// TestAFaceThatNeverAnswersIsNotAskedAgain: after one unanswered question
// from a face that never answered one, later questions are denied at once
// (ErrNeverAnswers) and the face told once; a face that answered before
// is asked again after a timeout.
func TestAFaceThatNeverAnswersIsNotAskedAgain(t *testing.T) {
	svc := New(NewStore(t.TempDir()))
	a := &silentAsker{}
	r := Request{Kind: KindTool, TaskID: "t1", Tool: "run_command", Command: "ls -l", Title: "run ls"}
	for i := range 3 {
		_, err := svc.Decide(context.Background(), r, Rules{Approval: "ask"}, a)
		want := ErrNoAnswer
		if i > 0 {
			want = ErrNeverAnswers
		}
		if !errors.Is(err, want) {
			t.Errorf("question %d: %v; want %v", i+1, err, want)
		}
	}
	if a.n() != 1 || a.silenced != 1 {
		t.Errorf("asked %d times, told %d times; want 1 and 1", a.n(), a.silenced)
	}

	svc = New(NewStore(t.TempDir()))
	b := &silentAsker{answers: true}
	for range 3 {
		svc.Decide(context.Background(), r, Rules{Approval: "ask"}, b)
	}
	if b.n() != 3 || b.silenced != 0 {
		t.Errorf("a face that answered once: asked %d times, told %d; want 3 and 0", b.n(), b.silenced)
	}
}
