package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/shellpolicy"
	"github.com/agentls/agentls/workspace"
)

// askPort is a Port that records its questions and answers each with
// answer.
type askPort struct {
	Unsupported
	answer tools.Decision
	err    error

	mu        sync.Mutex // guards questions
	questions []permission.Request
}

func (p *askPort) Event(agent.Event)                            {}
func (p *askPort) Editor(*workspace.Workspace) workspace.Editor { return nil }
func (p *askPort) AskUser(_ context.Context, q permission.Request) (tools.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.questions = append(p.questions, q)
	return p.answer, p.err
}

func (p *askPort) asked() []permission.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]permission.Request(nil), p.questions...)
}

func TestAlwaysAllowIsKeptInTheUserConfigDirByRoot(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	rootA, rootB := t.TempDir(), t.TempDir()
	for _, p := range []string{"go test", "ls", "go test"} {
		if err := RememberCommand(rootA, p); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := RememberedCommands(rootA); err != nil || strings.Join(got, ",") != "go test,ls" {
		t.Errorf("RememberedCommands(A) = %q, %v; want [go test ls]", got, err)
	}
	if got, _ := RememberedCommands(rootB); len(got) != 0 {
		t.Errorf("RememberedCommands(B) = %q; want none (another workspace)", got)
	}
	path, err := AllowedCommandsFile()
	if err != nil || !strings.HasPrefix(path, cfg+string(filepath.Separator)) {
		t.Fatalf("AllowedCommandsFile() = %q, %v; want a file under %s", path, err, cfg)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d files; want only the list (no temporary file left)", len(entries))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the list's mode: %v, %v; want readable by the user only", fi.Mode(), err)
	}
}

func TestApproverIgnoresTheWorkspaceAllowCommands(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := t.TempDir()
	state := filepath.Join(root, ".agentls")
	const shipped = `{"allowCommands":["go test","ls","gcc"]}`
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, SettingsFileName), []byte(shipped), 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(Defaults(), Options{})
	port := &askPort{answer: tools.AllowAlways}
	a := &approvalPolicy{h: h, port: port, root: root, stateDir: state, settings: Defaults(), shell: shellpolicy.Default(),
		task: func() (string, string) { return "T1", "p" }}
	ask := func(cmd string) {
		t.Helper()
		if _, err := a.Approve(context.Background(), tools.ApprovalRequest{Tool: "run_command", Command: cmd, Summary: "run " + cmd}); err != nil {
			t.Fatal(err)
		}
	}
	ask("ls -la")
	if n := len(port.asked()); n != 1 {
		t.Fatalf("asked %d times for ls; want once (the workspace's allowCommands is ignored)", n)
	}
	if p := port.asked()[0].Always; p != "ls" {
		t.Errorf("AlwaysPrefix = %q; want ls", p)
	}
	ask("ls -l")
	if n := len(port.asked()); n != 1 {
		t.Errorf("asked %d times; the user's Always allow `ls` must cover ls -l", n)
	}
	ask("gcc -wrapper /bin/sh,-c,id x.c")
	if q := port.asked(); len(q) != 2 || q[1].Always != "" {
		t.Errorf("questions %+v; want gcc asked, with no prefix offered", q)
	}
	if b, _ := os.ReadFile(filepath.Join(state, SettingsFileName)); string(b) != shipped {
		t.Errorf("the workspace file changed: %s", b)
	}
}

// confirm is confirmSettings's error.
func confirm(h *Host, s Settings, port Port) error {
	_, err := h.confirmSettings(context.Background(), s, "p", port)
	return err
}

func TestAChangedModelEndpointNeedsConsent(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OTHER_KEY": "sk-other"}
	start := Defaults()
	start.BaseURL = "http://127.0.0.1:1111/v1"
	h := New(start, Options{Getenv: func(k string) string { return env[k] }})

	same := start
	same.BaseURL = "http://user:pw@127.0.0.1:1111/other/v1"
	if err := confirm(h, same, &askPort{answer: tools.Deny}); err != nil {
		t.Errorf("same host and port: %v; want no question", err)
	}

	moved := start
	moved.BaseURL = "http://127.0.0.1:2222/v1?key=SECRET"
	deny := &askPort{answer: tools.Deny}
	err := confirm(h, moved, deny)
	var nt *ErrModelNotTrusted
	if !errors.As(err, &nt) || !strings.Contains(err.Error(), "127.0.0.1:2222") || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("denied: %v; want ErrModelNotTrusted naming the new URL, redacted", err)
	}
	if q := deny.asked(); len(q) != 1 || !strings.Contains(q[0].Title, "127.0.0.1:2222") {
		t.Errorf("questions %+v; want one naming the new URL", q)
	}
	if err := confirm(h, moved, &askPort{err: errors.New("no answer")}); !errors.As(err, &nt) {
		t.Errorf("a face that cannot ask: %v; want ErrModelNotTrusted", err)
	}
	if err := confirm(h, moved, nil); !errors.As(err, &nt) {
		t.Errorf("no port: %v; want ErrModelNotTrusted", err)
	}
	allow := &askPort{answer: tools.AllowOnce}
	if err := confirm(h, moved, allow); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if err := confirm(h, moved, deny); err != nil {
		t.Errorf("after consent: %v; want it remembered", err)
	}

	otherKey := start
	otherKey.APIKeyEnv = "OTHER_KEY"
	if err := confirm(h, otherKey, &askPort{answer: tools.Deny}); !errors.As(err, &nt) {
		t.Errorf("a changed apiKeyEnv: %v; want a question", err)
	}
	noKey := moved
	noKey.BaseURL = "http://127.0.0.1:3333/v1"
	noKey.APIKeyEnv = "UNSET_KEY"
	if err := confirm(h, noKey, &askPort{answer: tools.Deny}); err != nil {
		t.Errorf("no key to send: %v; want no question", err)
	}
}

func TestSettingsWidenedAtRunTimeNeedConsent(t *testing.T) {
	start := Defaults()
	start.CheckCommand = "go vet ./..."
	h := New(start, Options{Getenv: func(string) string { return "" }})
	ctx := context.Background()

	narrower := start
	narrower.Approval = "deny"
	narrower.CheckCommand = ""
	port := &askPort{answer: tools.Deny}
	if got, err := h.confirmSettings(ctx, narrower, "p", port); err != nil || got.Approval != "deny" || len(port.asked()) != 0 {
		t.Errorf("narrower settings: %+v, %v, %d questions; want applied without a question", got.Approval, err, len(port.asked()))
	}

	wider := start
	wider.Approval = "auto"
	wider.AllowCommands = []string{"go test"}
	wider.CheckCommand = "touch pwned"
	wider.Sandbox = "off"
	wider.CommandNetwork = Network{All: true}
	wider.Model = "other-model"
	got, err := h.confirmSettings(ctx, wider, "p", port)
	if err != nil {
		t.Fatal(err)
	}
	if got.Approval != "ask" || len(got.AllowCommands) != 0 || got.CheckCommand != "go vet ./..." || got.Sandbox != "workspace-write" || got.CommandNetwork.All {
		t.Errorf("denied: %+v; want every widening set back", got)
	}
	if got.Model != "other-model" {
		t.Errorf("denied: model %q; a change that widens nothing applies", got.Model)
	}
	if q := port.asked(); len(q) != 1 || !strings.Contains(q[0].Title, `checkCommand "touch pwned"`) || !strings.Contains(q[0].Title, `approval "auto"`) {
		t.Errorf("questions %+v; want one naming the changes", q)
	}

	allow := &askPort{answer: tools.AllowOnce}
	if got, err := h.confirmSettings(ctx, wider, "p", allow); err != nil || got.Approval != "auto" || got.CheckCommand != "touch pwned" {
		t.Errorf("allowed: %+v, %v; want applied", got, err)
	}
	if got, err := h.confirmSettings(ctx, wider, "p", port); err != nil || got.Approval != "auto" || len(port.asked()) != 1 {
		t.Errorf("after consent: %+v, %v; want applied without another question", got.Approval, err)
	}
}
