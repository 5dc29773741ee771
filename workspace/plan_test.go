package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestPlanIsWhatDiskEditorWrites: the plan (the preview's source) and the
// bytes DiskEditor writes agree byte for byte, for several edits matched
// against one text, CRLF (new lines written "\r\n"), a BOM, and a new file.
func TestPlanIsWhatDiskEditorWrites(t *testing.T) {
	ab := func(f *File) []TextEdit { // a→ab, b→c, both against "a b"
		return []TextEdit{
			{Range: Range{Start: Position{0, 0}, End: Position{0, 1}}, NewText: "ab"},
			{Range: Range{Start: Position{0, 2}, End: Position{0, 3}}, NewText: "c"},
		}
	}
	tests := []struct {
		name, file, text, want string
		edits                  func(*File) []TextEdit
	}{
		{"two edits on one text", "ab.txt", "a b\n", "ab c\n", ab},
		{"two edits, CRLF", "crlf.txt", "a b\r\nz\r\n", "ab c\r\nz\r\n", ab},
		{"new lines on a CRLF file", "lines.txt", "one\r\ntwo\r\n", "one\r\nx\r\ny\r\ntwo\r\n", func(*File) []TextEdit {
			return []TextEdit{{Range: Range{Start: Position{1, 0}, End: Position{1, 0}}, NewText: "x\ny\n"}}
		}},
		{"BOM kept", "bom.txt", "\xEF\xBB\xBFa b\n", "\xEF\xBB\xBFab c\n", ab},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{tt.file: tt.text})
			w := newWS(t, Options{Roots: []string{root}})
			ctx := context.Background()
			f := mustRead(t, w, mustResolve(t, w, tt.file))
			fe := FileEdit{Path: f.Path, BaseHash: f.Hash, Edits: tt.edits(f)}
			plan, err := w.Plan(ctx, []FileEdit{fe})
			if err != nil {
				t.Fatal(err)
			}
			planned := string(plan.Files[0].Bytes())
			if planned != tt.want {
				t.Errorf("planned %q; want %q", planned, tt.want)
			}
			if err := w.DiskEditor().Apply(ctx, "task-1", plan.FileEdits()); err != nil {
				t.Fatal(err)
			}
			if got := readString(t, filepath.Join(root, tt.file)); got != planned {
				t.Errorf("written %q; planned %q", got, planned)
			}
		})
	}

	root := t.TempDir()
	w := newWS(t, Options{Roots: []string{root}})
	create := FileEdit{Path: mustResolve(t, w, "dir/new.txt"), Create: true, Edits: []TextEdit{{NewText: "new\n"}}}
	plan, err := w.Plan(context.Background(), []FileEdit{create})
	if err != nil || string(plan.Files[0].Bytes()) != "new\n" || plan.Files[0].Diff() != "@@ -1,0 +1,1 @@\n+new\n" {
		t.Fatalf("plan of a new file = %+v, %v", plan, err)
	}
	if err := w.DiskEditor().Apply(context.Background(), "task-1", plan.FileEdits()); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(root, "dir/new.txt")); got != "new\n" {
		t.Errorf("created %q", got)
	}
}

// TestCheckBaseIsTheOneStalenessRule: the plan and DiskEditor refuse the
// same stale edits with ErrStale: a changed disk file, a changed buffer
// (by text, or by version alone), an edit with no base; a new file over an
// existing one is refused too.
func TestCheckBaseIsTheOneStalenessRule(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"disk.txt": "one\n", "buf.txt": "one\n"})
	w := newWS(t, Options{Roots: []string{root}})
	ctx := context.Background()
	bufAbs := filepath.Join(root, "buf.txt")
	w.Buffers().Open(bufAbs, "text", 1, "one\n")
	disk := mustRead(t, w, mustResolve(t, w, "disk.txt"))
	buf := mustRead(t, w, mustResolve(t, w, "buf.txt"))
	if !buf.FromBuffer {
		t.Fatal("buf.txt not read from its buffer")
	}
	if err := os.WriteFile(filepath.Join(root, "disk.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The user types and types back: same text, a later version.
	if err := w.Buffers().Change(bufAbs, 2, []Change{{Text: "x\n"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Buffers().Change(bufAbs, 3, []Change{{Text: "one\n"}}); err != nil {
		t.Fatal(err)
	}
	noBase := replaceAll(disk, "z\n")
	noBase.BaseHash = ""
	for name, fe := range map[string]FileEdit{
		"disk changed":           replaceAll(disk, "z\n"),
		"buffer version changed": replaceAll(buf, "z\n"),
	} {
		if _, err := w.Plan(ctx, []FileEdit{fe}); !errors.Is(err, ErrStale) {
			t.Errorf("%s: Plan = %v; want ErrStale", name, err)
		}
		if err := w.DiskEditor().Apply(ctx, "t", []FileEdit{fe}); !errors.Is(err, ErrStale) {
			t.Errorf("%s: DiskEditor.Apply = %v; want ErrStale", name, err)
		}
	}
	if _, err := w.Plan(ctx, []FileEdit{noBase}); err == nil {
		t.Errorf("an edit without a base was planned")
	}
	create := FileEdit{Path: disk.Path, Create: true, Edits: []TextEdit{{NewText: "x"}}}
	if _, err := w.Plan(ctx, []FileEdit{create}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Plan of a new file over an existing one = %v; want fs.ErrExist", err)
	}
	if got := readString(t, filepath.Join(root, "disk.txt")); got != "two\n" {
		t.Errorf("disk.txt touched: %q", got)
	}
}
