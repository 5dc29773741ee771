package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/workspace"
)

// countingEditor counts Apply calls and the files in each.
type countingEditor struct {
	next  workspace.Editor
	calls [][]string
}

func (c *countingEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	var paths []string
	for _, e := range edits {
		paths = append(paths, e.Path.String())
	}
	c.calls = append(c.calls, paths)
	return c.next.Apply(ctx, label, edits)
}

func readFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUndoAfterRestartKeepsUserEdit: a task changes three files (and
// creates a fourth); the user then edits one of the three where the task
// did. After a restart (store and workspace reopened), Undo reverts the two
// untouched files and deletes the created one in ONE Apply, leaves the
// user's file alone and names it with a diff.
func TestUndoAfterRestartKeepsUserEdit(t *testing.T) {
	orig := map[string]string{
		"a.txt": "alpha\nline 2\nline 3\n",
		"b.txt": "beta\nline 2\nline 3\n",
		"c.txt": "gamma\nline 2\nline 3\n",
	}
	root, ws := testWorkspace(t, orig)
	dbPath := store.DefaultPath(root)
	st, err := store.Open(context.Background(), dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &scriptModel{resps: []*llm.Response{
		calls("",
			call("write_file", `{"path":"a.txt","content":"ALPHA\nline 2\nline 3\n"}`),
			call("write_file", `{"path":"b.txt","content":"BETA\nline 2\nline 3\n"}`),
			call("write_file", `{"path":"c.txt","content":"GAMMA\nline 2\nline 3\n"}`),
			call("write_file", `{"path":"d.txt","content":"new file\n"}`)),
		answer("Upper-cased the first lines and added d.txt."),
	}}
	res, _ := newRunner(st, Config{Root: root, Validate: ValidateOff}, m, realTools(ws, nil)).
		Run(context.Background(), TaskSpec{Kind: KindEdit, Prompt: "upper-case the first lines"}, nil)
	if res.Status != StateCompleted || len(res.Files) != 4 {
		t.Fatalf("task %s (%s) changed %d files: %s", res.Status, res.StopReason, len(res.Files), res.Error)
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The user edits b.txt on the line the task changed.
	if err := os.WriteFile(filepath.Join(root, "b.txt"), []byte("Beta, by the user\nline 2\nline 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Restart: a new store and a new workspace.
	st2 := openStore(t, dbPath)
	ws2 := mustWorkspace(t, root)
	ed := &countingEditor{next: ws2.DiskEditor()}
	rep, err := journal.Undo(context.Background(), st2, res.TaskID, ws2, ed)
	if err != nil {
		t.Fatal(err)
	}
	if len(ed.calls) != 1 || strings.Join(ed.calls[0], ",") != "a.txt,c.txt" {
		t.Errorf("Apply calls %v; want one with a.txt and c.txt", ed.calls)
	}
	for _, name := range []string{"a.txt", "c.txt"} {
		if got := readFile(t, root, name); got != orig[name] {
			t.Errorf("%s = %q after undo; want %q", name, got, orig[name])
		}
	}
	if got := readFile(t, root, "b.txt"); got != "Beta, by the user\nline 2\nline 3\n" {
		t.Errorf("the user's edit of b.txt was clobbered: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "d.txt")); !os.IsNotExist(err) {
		t.Errorf("d.txt, created by the task, still exists (%v)", err)
	}
	var reverted []string
	for _, f := range rep.Reverted {
		reverted = append(reverted, f.Path+":"+string(f.Action))
	}
	if strings.Join(reverted, " ") != "a.txt:write c.txt:write d.txt:delete" {
		t.Errorf("reverted %v", reverted)
	}
	if len(rep.NotReverted) != 1 {
		t.Fatalf("not reverted %+v; want b.txt", rep.NotReverted)
	}
	nr := rep.NotReverted[0]
	if nr.Path != "b.txt" || nr.Action != store.RevertConflict || !strings.Contains(nr.Diff, "-BETA") || !strings.Contains(nr.Diff, "+beta") ||
		!strings.Contains(nr.UserDiff, "+Beta, by the user") || nr.Reason == "" {
		t.Errorf("b.txt report %+v", nr)
	}

	// Undoing again changes nothing and says so.
	rep2, err := journal.Undo(context.Background(), st2, res.TaskID, ws2, ed)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep2.Reverted) != 0 || len(rep2.Unchanged) != 3 || len(rep2.NotReverted) != 1 || len(ed.calls) != 1 {
		t.Errorf("second undo: reverted %v unchanged %v not %v, %d applies", rep2.Reverted, rep2.Unchanged, rep2.NotReverted, len(ed.calls))
	}
}

// TestUndoMergesAroundUserEdit: a user change away from the task's lines is
// kept and the task's change is reverted around it (three-way).
func TestUndoMergesAroundUserEdit(t *testing.T) {
	root, ws := testWorkspace(t, map[string]string{"a.txt": "one\ntwo\nthree\nfour\nfive\n"})
	st := openStore(t, store.DefaultPath(root))
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("write_file", `{"path":"a.txt","content":"ONE\ntwo\nthree\nfour\nfive\n"}`)),
		answer("done"),
	}}
	r := newRunner(st, Config{Root: root, Validate: ValidateOff}, m, realTools(ws, nil))
	res, _ := r.Run(context.Background(), TaskSpec{Kind: KindEdit, Prompt: "upper-case one"}, nil)
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("ONE\ntwo\nthree\nfour\nFIVE!\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := journal.Undo(context.Background(), st, res.TaskID, ws, ws.DiskEditor())
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, root, "a.txt"); got != "one\ntwo\nthree\nfour\nFIVE!\n" {
		t.Errorf("a.txt = %q; want the task reverted and the user's line kept", got)
	}
	if len(rep.Reverted) != 1 || !rep.Reverted[0].Merged {
		t.Errorf("report %+v; want a.txt reverted by a merge", rep)
	}
}
