package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lines(n int, prefix string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(prefix)
		b.WriteString(" line ")
		b.WriteString(strings.Repeat("i", i%7))
		b.WriteString("\n")
	}
	return b.String()
}

func replaceLine(text string, n int, with string) string {
	ls := strings.SplitAfter(text, "\n")
	ls[n-1] = with + "\n"
	return strings.Join(ls, "")
}

// TestUndoThreeFilesUserEditedOne is the scenario: a task changed
// three files; afterwards the user edited one of them where the task had.
// Undo reverts the two untouched files, leaves the user's edit alone and
// names the third file with a diff. The plan is built after a restart, from
// the database alone (no git).
func TestUndoThreeFilesUserEditedOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := DefaultPath(dir)
	before := map[string]string{"a.go": lines(20, "a"), "b.go": lines(20, "b"), "c.go": lines(20, "c")}
	after := map[string]string{}
	s := openTest(t, dbPath)
	must(t, s.CreateTask(Task{ID: "T", Prompt: "refactor"}))
	for _, p := range []string{"a.go", "b.go", "c.go"} {
		mid := replaceLine(before[p], 5, p+" changed by the task")
		after[p] = replaceLine(mid, 12, p+" changed again by the task")
		// Two edits per file: undo needs the text before the first and after the last.
		must(t, s.RecordEdit("T", Edit{Path: p, Before: before[p], After: mid}))
		must(t, s.RecordEdit("T", Edit{Path: p, Before: mid, After: after[p]}))
	}
	closeTest(t, s)

	// The files on disk: the task's text, and the user's edit of c.go line 5.
	disk := map[string]string{"a.go": after["a.go"], "b.go": after["b.go"], "c.go": replaceLine(after["c.go"], 5, "c.go USER EDIT")}
	for p, text := range disk {
		must(t, os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644))
	}

	s = openTest(t, dbPath)
	changes, err := s.TaskFiles(ctx, "T")
	must(t, err)
	if len(changes) != 3 || changes[0].Edits != 2 || changes[0].Before != before["a.go"] || changes[0].After != after["a.go"] {
		t.Fatalf("TaskFiles = %+v; want 3 files folded over 2 edits each", changes)
	}
	plan, err := PlanUndo("T", changes, func(p string) (string, bool, error) {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if os.IsNotExist(err) {
			return "", false, nil
		}
		return string(b), err == nil, err
	})
	must(t, err)
	for _, f := range plan.Files {
		switch f.Path {
		case "a.go", "b.go":
			if f.Action != RevertWrite || f.Text != before[f.Path] || f.Merged {
				t.Errorf("%s: %s %q; want write of the text before the task", f.Path, f.Action, f.Reason)
			}
		case "c.go":
			if f.Action != RevertConflict {
				t.Errorf("c.go: %s; want conflict", f.Action)
			}
			if !strings.Contains(f.Diff, "-c.go changed by the task") || !strings.Contains(f.Diff, "+c line i") || !strings.Contains(f.UserDiff, "+c.go USER EDIT") {
				t.Errorf("c.go diffs:\n%s\n%s", f.Diff, f.UserDiff)
			}
		}
	}
	if cs := plan.Conflicts(); len(cs) != 1 || cs[0].Path != "c.go" {
		t.Errorf("Conflicts() = %+v; want c.go only", cs)
	}
}

func TestMerge3(t *testing.T) {
	before := lines(30, "x")
	task := replaceLine(replaceLine(before, 3, "task 3"), 20, "task 20")
	for _, tc := range []struct {
		name    string
		current string
		want    string // "" for a conflict
	}{
		{"user edit far from the task merges", replaceLine(task, 10, "user 10"), replaceLine(before, 10, "user 10")},
		{"user edit in the task's line conflicts", replaceLine(task, 3, "user 3"), ""},
		{"user edit of the next line conflicts (adjacent)", replaceLine(task, 4, "user 4"), ""},
		{"user appended at the end", task + "user tail\n", before + "user tail\n"},
		{"user inserted at the top", "user head\n" + task, "user head\n" + before},
		{"user already reverted one hunk by hand", replaceLine(task, 3, strings.Split(before, "\n")[2]), before},
		{"no user change", task, before},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Merge3(task, tc.current, before)
			if tc.want == "" {
				if ok {
					t.Errorf("Merge3 merged:\n%s\nwant a conflict", got)
				}
				return
			}
			if !ok || got != tc.want {
				t.Errorf("Merge3 = ok %v\n%s\nwant\n%s", ok, got, tc.want)
			}
		})
	}
}

func TestRevertFile(t *testing.T) {
	before := lines(10, "r")
	after := replaceLine(before, 2, "task")
	for _, tc := range []struct {
		name    string
		fc      FileChange
		current string
		exists  bool
		action  RevertAction
		text    string
	}{
		{"unchanged since the task", FileChange{Before: before, After: after}, after, true, RevertWrite, before},
		{"user edit elsewhere merges", FileChange{Before: before, After: after}, replaceLine(after, 8, "user"), true, RevertWrite, replaceLine(before, 8, "user")},
		{"user overlapping edit", FileChange{Before: before, After: after}, replaceLine(after, 2, "user"), true, RevertConflict, ""},
		{"already reverted", FileChange{Before: before, After: after}, before, true, RevertNone, ""},
		{"user deleted the file", FileChange{Before: before, After: after}, "", false, RevertConflict, ""},
		{"created by the task, unchanged: delete", FileChange{Created: true, After: after}, after, true, RevertDelete, ""},
		{"created by the task, then changed", FileChange{Created: true, After: after}, after + "more\n", true, RevertConflict, ""},
		{"created by the task, already gone", FileChange{Created: true, After: after}, "", false, RevertNone, ""},
		{"deleted by the task: recreate", FileChange{Before: before, Deleted: true}, "", false, RevertWrite, before},
		{"deleted by the task, recreated by the user", FileChange{Before: before, Deleted: true}, "new\n", true, RevertConflict, ""},
		{"created then deleted by the task", FileChange{Created: true, Deleted: true}, "", false, RevertNone, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fc.Path = "f.txt"
			r := RevertFile(tc.fc, tc.current, tc.exists)
			if r.Action != tc.action || r.Text != tc.text {
				t.Errorf("RevertFile = %s %q (%s); want %s %q", r.Action, r.Text, r.Reason, tc.action, tc.text)
			}
			if r.Action == RevertConflict && (r.Reason == "" || r.Diff == "") {
				t.Errorf("conflict without reason or diff: %+v", r)
			}
		})
	}
}

func TestFileChangesCreatedThenEdited(t *testing.T) {
	fcs := FileChanges([]Edit{
		{Seq: 1, Path: "new.go", Created: true, After: "v1\n"},
		{Seq: 2, Path: "old.go", Before: "o\n", After: "o2\n"},
		{Seq: 3, Path: "new.go", Before: "v1\n", After: "v2\n"},
	})
	if len(fcs) != 2 || fcs[0].Path != "new.go" || !fcs[0].Created || fcs[0].After != "v2\n" || fcs[0].Edits != 2 || fcs[1].Before != "o\n" {
		t.Errorf("FileChanges = %+v", fcs)
	}
}
