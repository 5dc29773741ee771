package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCommandChangesAreListedWithTextBefore runs a real shell command
// between StartCommand and End: End lists what it created, changed and
// removed (net: a file it created and removed is not listed), with the
// text before for the files agentls had read, and none for a file it never
// read. A change made just before the command is not attributed to it.
func TestCommandChangesAreListedWithTextBefore(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skipf("no sh: %v", err)
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "old\n", "b.txt": "bye\n", "d.txt": "never read\n", "e.txt": "e\n"})
	w := newWS(t, Options{Roots: []string{dir}, Watch: true})
	ctx := context.Background()
	mustRead(t, w, mustResolve(t, w, "a.txt"))
	mustRead(t, w, mustResolve(t, w, "b.txt"))
	// Just before the command: someone else's change.
	if err := os.WriteFile(filepath.Join(dir, "e.txt"), []byte("edited before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := w.StartCommand(ctx, "task-1")
	cmd := exec.Command("sh", "-c", `sed -i s/old/new/ a.txt && echo made > c.txt && rm b.txt && echo x >> d.txt && echo t > tmp.txt && rm tmp.txt`)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("command: %v\n%s", err, out)
	}
	deltas, complete := run.End(ctx)
	if !complete {
		t.Errorf("End: complete = false with a working watcher")
	}
	got := make(map[string]FileDelta)
	for _, d := range deltas {
		got[d.Path.String()] = d
	}
	check := func(name string, kind ChangeKind, before string, haveBefore bool, after string) {
		t.Helper()
		d, ok := got[name]
		if !ok {
			t.Errorf("%s: not listed; got %v", name, deltas)
			return
		}
		if d.Kind != kind || d.HaveBefore != haveBefore || d.Before != before {
			t.Errorf("%s: %v, before %q (known %v); want %v, before %q (known %v)", name, d.Kind, d.Before, d.HaveBefore, kind, before, haveBefore)
		}
		if want := ""; after != "" {
			want = HashText(after)
			if d.AfterHash != want {
				t.Errorf("%s: AfterHash %s; want the hash of %q", name, d.AfterHash, after)
			}
		}
		if len(d.Origins) != 1 || d.Origins[0] != OriginCommand {
			t.Errorf("%s: origins %v; want [command]", name, d.Origins)
		}
	}
	check("a.txt", Modified, "old\n", true, "new\n")
	check("b.txt", Removed, "bye\n", true, "")
	check("c.txt", Created, "", false, "made\n")
	check("d.txt", Modified, "", false, "never read\nx\n")
	for _, name := range []string{"tmp.txt", "e.txt"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s listed as the command's change: %v", name, got[name])
		}
	}
	if len(deltas) != 4 {
		t.Errorf("End listed %d files; want 4: %v", len(deltas), deltas)
	}
	changes, _ := w.ChangesSince(run.Since())
	for _, c := range changes {
		if c.Origin == OriginCommand && c.Label != "task-1" {
			t.Errorf("change %v: label %q; want the command's label", c, c.Label)
		}
	}
	// After End, changes are the outside's again.
	seq := w.Seq()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.settle(ctx)
	if !hasChange(w, seq, "a.txt", Modified, OriginOutside) {
		t.Errorf("a change after End is not recorded as outside: %v", must(w.ChangesSince(seq)))
	}
}
