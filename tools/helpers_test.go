package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentls/agentls/workspace"
)

// fixture makes a workspace on a temporary folder holding files.
func fixture(t testing.TB, files map[string]string) (string, *workspace.Workspace) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return dir, ws
}

func newReg(t testing.TB, env Env) *Registry {
	t.Helper()
	r := New(env)
	t.Cleanup(func() { r.Close() })
	return r
}

func call(t testing.TB, r *Registry, name string, args any) Result {
	t.Helper()
	b, ok := args.(string)
	raw := []byte(b)
	if !ok {
		var err error
		raw, err = json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.Run(context.Background(), name, raw)
	if err != nil {
		t.Fatalf("%s %s: Go error %v", name, raw, err)
	}
	return res
}

// recordingEditor records Apply calls and applies them to disk.
type recordingEditor struct {
	mu    sync.Mutex
	calls [][]workspace.FileEdit
	next  workspace.Editor
	err   error // returned instead of applying, when set
}

func (e *recordingEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	e.mu.Lock()
	e.calls = append(e.calls, edits)
	e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	return e.next.Apply(ctx, label, edits)
}

// fixedApprover answers every request the same way and counts them.
type fixedApprover struct {
	mu   sync.Mutex
	d    Decision
	reqs []ApprovalRequest
}

func (a *fixedApprover) Approve(_ context.Context, req ApprovalRequest) (Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, req)
	return a.d, nil
}
