package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/workspace"
)

const goSrc = "package a\n\nfunc A() {\n\tx := 1\n\treturn\n}\n\nfunc B() {\n\tx := 1\n\treturn\n}\n"

func TestEditFile(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string // in the result text
		after   string // the file afterwards ("" = unchanged)
	}{
		{"unique", map[string]any{"old_string": "func A() {\n\tx := 1", "new_string": "func A() {\n\tx := 2"}, false, "1 replacement",
			strings.Replace(goSrc, "x := 1", "x := 2", 1)},
		{"ambiguous", map[string]any{"old_string": "\tx := 1", "new_string": "\tx := 2"}, true, "occurs 2 times in a.go (lines 4, 9)", ""},
		{"replace all", map[string]any{"old_string": "x := 1", "new_string": "y := 1", "replace_all": true}, false, "2 replacements",
			strings.ReplaceAll(goSrc, "x := 1", "y := 1")},
		{"no-op", map[string]any{"old_string": "func A", "new_string": "func A"}, true, "would change nothing", ""},
		{"empty old", map[string]any{"old_string": "", "new_string": "x"}, true, "old_string is empty", ""},
		{"whitespace only", map[string]any{"old_string": "func B() {\n    x := 1", "new_string": "func B() {\n\tx := 3"}, true,
			"line 9: the file indents with 1 tab, old_string with 4 spaces", ""},
		{"closest candidate", map[string]any{"old_string": "func C() {\n\tx := 1", "new_string": "z"}, true,
			"first difference, line 3: the file has \"func A() {\" where old_string has \"func C() {\"", ""},
		{"line numbers copied", map[string]any{"old_string": "     3\tfunc A() {", "new_string": "z"}, true, "line numbers", ""},
		{"delete", map[string]any{"old_str": "\nfunc B() {\n\tx := 1\n\treturn\n}\n", "new_str": ""}, false, "1 replacement",
			"package a\n\nfunc A() {\n\tx := 1\n\treturn\n}\n"},
		{"several edits", map[string]any{"edits": []map[string]any{{"old_string": "func A()", "new_string": "func A1()"}, {"old_string": "func B()", "new_string": "func B1()"}}},
			false, "2 replacements", strings.NewReplacer("func A()", "func A1()", "func B()", "func B1()").Replace(goSrc)},
		{"all or none", map[string]any{"edits": []map[string]any{{"old_string": "func A()", "new_string": "func A1()"}, {"old_string": "func Z()", "new_string": "x"}}},
			true, "edit 2: old_string was not found", ""},
		{"overlap", map[string]any{"edits": []map[string]any{{"old_string": "func A() {", "new_string": "x"}, {"old_string": "A() {\n\tx", "new_string": "y"}}},
			true, "overlap", ""},
		{"both forms", map[string]any{"old_string": "a", "new_string": "b", "edits": []map[string]any{{"old_string": "c", "new_string": "d"}}}, true, "not both", ""},
		{"missing new", map[string]any{"old_string": "func A"}, true, "missing new_string", ""},
		{"no file", map[string]any{"path": "zz.go", "old_string": "a", "new_string": "b"}, true, "write_file", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, ws := fixture(t, map[string]string{"a.go": goSrc})
			ed := &recordingEditor{next: ws.DiskEditor()}
			r := newReg(t, Env{Workspace: ws, Editor: ed})
			if _, ok := tt.args["path"]; !ok {
				tt.args["path"] = "a.go"
			}
			res := call(t, r, "edit_file", tt.args)
			if res.IsError != tt.isError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("edit_file %v = (error %v)\n%s\nwant error %v and %q", tt.args, res.IsError, res.Text, tt.isError, tt.want)
			}
			data, _ := os.ReadFile(filepath.Join(dir, "a.go"))
			want := tt.after
			if want == "" {
				want = goSrc
			}
			if string(data) != want {
				t.Errorf("file after = %q; want %q", data, want)
			}
			if !tt.isError && len(ed.calls) != 1 {
				t.Errorf("Editor.Apply called %d times; want once (one undoable change)", len(ed.calls))
			}
			if tt.isError && len(ed.calls) != 0 {
				t.Errorf("Editor.Apply called on a refused edit")
			}
		})
	}
}

// TestEditFileThroughEditorBuffer: an open buffer is edited against its
// unsaved text, with its version, in one Apply call, without approval.
func TestEditFileThroughEditorBuffer(t *testing.T) {
	dir, ws := fixture(t, map[string]string{"a.go": goSrc})
	abs := filepath.Join(dir, "a.go")
	ws.Buffers().Open(abs, "go", 4, "package a // unsaved 日本\n\nfunc A() {}\n")
	ed := &recordingEditor{err: errors.New("applied by the fake editor")}
	ap := &fixedApprover{d: Deny}
	r := newReg(t, Env{Workspace: ws, Editor: ed, Approver: ap})
	res := call(t, r, "edit_file", map[string]any{"path": "a.go", "old_string": "日本\n\nfunc A", "new_string": "x\nfunc A"})
	if len(ed.calls) != 1 || len(ap.reqs) != 0 {
		t.Fatalf("Apply calls %d, approvals %d; want 1 and 0 (%s)", len(ed.calls), len(ap.reqs), res.Text)
	}
	fe := ed.calls[0][0]
	if fe.BaseVersion != 4 || fe.BaseHash != workspace.HashText("package a // unsaved 日本\n\nfunc A() {}\n") {
		t.Errorf("FileEdit base = version %d hash %s", fe.BaseVersion, fe.BaseHash)
	}
	te := fe.Edits[0]
	if te.Range.Start != (workspace.Position{Line: 0, Character: 21}) || te.Range.End != (workspace.Position{Line: 2, Character: 6}) {
		t.Errorf("edit range = %+v; want UTF-16 positions 0:21-2:6", te.Range)
	}
	if !res.IsError || !strings.Contains(res.Text, "applied by the fake editor") {
		t.Errorf("editor refusal not reported: %s", res.Text)
	}
}

func TestEditFileStale(t *testing.T) {
	_, ws := fixture(t, map[string]string{"a.go": goSrc})
	ed := &recordingEditor{err: fmt.Errorf("edit a.go: %w", workspace.ErrStale)}
	r := newReg(t, Env{Workspace: ws, Editor: ed})
	res := call(t, r, "edit_file", map[string]any{"path": "a.go", "old_string": "func A", "new_string": "func Z"})
	if !res.IsError || !strings.Contains(res.Text, "file changed since you read it: read it again") {
		t.Errorf("stale edit = %s", res.Text)
	}
}

func TestEditFileCRLF(t *testing.T) {
	dir, ws := fixture(t, map[string]string{"w.txt": "one\r\ntwo\r\nthree\r\n"})
	r := newReg(t, Env{Workspace: ws})
	res := call(t, r, "edit_file", map[string]any{"path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"})
	data, _ := os.ReadFile(filepath.Join(dir, "w.txt"))
	if res.IsError || string(data) != "1\r\n2\r\nthree\r\n" {
		t.Errorf("CRLF edit = %s; file %q", res.Text, data)
	}
}

func TestWriteFile(t *testing.T) {
	dir, ws := fixture(t, map[string]string{"old.txt": "old\n", "open.txt": "disk\n"})
	ap := &fixedApprover{d: AllowOnce}
	r := newReg(t, Env{Workspace: ws, Approver: ap})
	res := call(t, r, "write_file", map[string]any{"path": "new/dir/n.txt", "content": "a\nb\n"})
	if data, _ := os.ReadFile(filepath.Join(dir, "new/dir/n.txt")); res.IsError || string(data) != "a\nb\n" || !strings.Contains(res.Text, "created new/dir/n.txt (2 lines)") {
		t.Errorf("create = %s; file %q", res.Text, data)
	}
	res = call(t, r, "write_file", map[string]any{"file_path": "old.txt", "contents": "new\n"})
	if data, _ := os.ReadFile(filepath.Join(dir, "old.txt")); res.IsError || string(data) != "new\n" || !strings.Contains(res.Text, "replaced old.txt") {
		t.Errorf("replace = %s; file %q", res.Text, data)
	}
	if len(ap.reqs) != 2 || ap.reqs[0].Path != "new/dir/n.txt" {
		t.Errorf("approvals = %+v; want one per write to a file not open in the editor", ap.reqs)
	}
	res = call(t, r, "write_file", map[string]any{"path": ".agentls/x", "content": "x"})
	if !res.IsError || !strings.Contains(res.Text, "state folder") {
		t.Errorf("write into .agentls = %s", res.Text)
	}
	// An open buffer with unsaved changes is not overwritten by default.
	ed := &recordingEditor{next: ws.DiskEditor(), err: errors.New("editor applied it")}
	r = newReg(t, Env{Workspace: ws, Editor: ed, Approver: ap})
	ws.Buffers().Open(filepath.Join(dir, "open.txt"), "text", 2, "unsaved\n")
	res = call(t, r, "write_file", map[string]any{"path": "open.txt", "content": "agent\n"})
	if !res.IsError || !strings.Contains(res.Text, "unsaved changes") || len(ed.calls) != 0 {
		t.Errorf("write over unsaved buffer = %s (%d applies)", res.Text, len(ed.calls))
	}
	call(t, r, "write_file", map[string]any{"path": "open.txt", "content": "agent\n", "overwrite_unsaved": true})
	if len(ed.calls) != 1 || ed.calls[0][0].BaseVersion != 2 {
		t.Errorf("overwrite_unsaved did not go through the editor: %+v", ed.calls)
	}
	// Denied: nothing written, the model is told to continue without it.
	deny := newReg(t, Env{Workspace: ws, Approver: &fixedApprover{d: Deny}})
	res = call(t, deny, "write_file", map[string]any{"path": "denied.txt", "content": "x"})
	if _, err := os.Stat(filepath.Join(dir, "denied.txt")); !res.IsError || !strings.Contains(res.Text, "denied") || err == nil {
		t.Errorf("denied write = %s (file exists: %v)", res.Text, err == nil)
	}
}

func TestUpdatePlan(t *testing.T) {
	_, ws := fixture(t, nil)
	r := newReg(t, Env{Workspace: ws})
	res := call(t, r, "update_plan", map[string]any{"items": []map[string]any{
		{"id": "1", "text": "read", "status": "done"}, {"id": "2", "text": "edit", "status": "in_progress"},
		{"id": "3", "text": "docs", "status": "skipped", "reason": "already satisfied, no change needed"},
	}})
	plan, ok := res.Data.(*Plan)
	if res.IsError || !ok || plan.Open() != 1 || !strings.Contains(res.Text, "[x] 1. read") || !strings.Contains(res.Text, "1 of 3 items open") {
		t.Fatalf("update_plan = %s (%+v)", res.Text, res.Data)
	}
	for _, bad := range []string{
		`{"items":[{"id":"1","text":"x","status":"skipped"}]}`,
		`{"items":[{"id":"1","text":"x","status":"finished-ish"}]}`,
		`{"items":[{"id":"1","text":"x","status":"done"},{"id":"1","text":"y","status":"done"}]}`,
	} {
		if res := call(t, r, "update_plan", bad); !res.IsError {
			t.Errorf("update_plan %s accepted: %s", bad, res.Text)
		}
	}
}

// TestNoToolWritesTheSettings: write_file and edit_file refuse the state
// folder, however the path is spelled, and run_command does not run there
// or in .git.
func TestNoToolWritesTheSettings(t *testing.T) {
	dir, ws := fixture(t, map[string]string{".agentls/settings.json": `{"allowCommands":[]}` + "\n", ".git/hooks/.keep": ""})
	r := newReg(t, Env{Workspace: ws})
	for _, p := range []string{".agentls/settings.json", "./.agentls/settings.json", "sub/../.agentls/settings.json", ".agentls/new.json"} {
		if res := call(t, r, "write_file", map[string]any{"path": p, "content": `{"allowCommands":["sh"]}`}); !res.IsError || !strings.Contains(res.Text, "state folder") {
			t.Errorf("write_file %s: %s", p, res.Text)
		}
		if res := call(t, r, "edit_file", map[string]any{"path": p, "old_string": "[]", "new_string": `["sh"]`}); !res.IsError || !strings.Contains(res.Text, "state folder") {
			t.Errorf("edit_file %s: %s", p, res.Text)
		}
	}
	for _, cwd := range []string{".agentls", ".git/hooks", ".git"} {
		if res := call(t, r, "run_command", map[string]any{"command": "touch x", "cwd": cwd}); !res.IsError || !strings.Contains(res.Text, "state folder or in .git") {
			t.Errorf("run_command in %s: %s", cwd, res.Text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".agentls", "settings.json")); string(b) != `{"allowCommands":[]}`+"\n" {
		t.Errorf("settings changed: %s", b)
	}
}

// bufferOnlyEditor stands for the LSP editor: it edits open buffers only,
// refusing an edit whose base is not the buffer's text.
type bufferOnlyEditor struct{ ws *workspace.Workspace }

func (e bufferOnlyEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	for _, fe := range edits {
		doc, ok := e.ws.Buffers().Get(e.ws.Abs(fe.Path))
		if ok && workspace.HashText(doc.Text) != fe.BaseHash {
			return fmt.Errorf("buffer of %s: %w", fe.Path, workspace.ErrStale)
		}
	}
	return e.ws.DiskEditor().Apply(ctx, label, edits)
}

// TestEditFileUnderStaleCleanBufferGoesToDisk: after a command rewrote a
// file the editor holds clean, edit_file edits the disk text it read,
// instead of sending the editor an edit against text its buffer lacks.
func TestEditFileUnderStaleCleanBufferGoesToDisk(t *testing.T) {
	dir, ws := fixture(t, map[string]string{"a.go": "package a // old\n"})
	ws.Buffers().Open(filepath.Join(dir, "a.go"), "go", 1, "package a // old\n")
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a // new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newReg(t, Env{Workspace: ws, Editor: bufferOnlyEditor{ws}})
	res := call(t, r, "edit_file", map[string]any{"path": "a.go", "old_string": "// new", "new_string": "// edited"})
	if res.IsError {
		t.Fatalf("edit_file under a stale clean buffer: %s", res.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.go")); string(b) != "package a // edited\n" {
		t.Errorf("a.go = %q; want the edit on disk", b)
	}
}

// TestFileToolsRefuseGitState: write_file and edit_file refuse git's own
// files and folders git would take for a git dir, with a message that says
// what to do, before asking the user; reads stay allowed, and the work
// tree's git files (.gitattributes) are ordinary files.
func TestFileToolsRefuseGitState(t *testing.T) {
	dir, ws := fixture(t, map[string]string{
		".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/.keep": "",
		".gitattributes": "*.txt text\n", "a.txt": "a\n", "fake/HEAD": "x\n", "fake/refs/.keep": "",
	})
	ap := &fixedApprover{d: AllowOnce}
	r := newReg(t, Env{Workspace: ws, Approver: ap})
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		refused bool
	}{
		{"write_file", map[string]any{"path": ".git/config", "content": "[filter \"x\"]\n\tclean = sh\n"}, true},
		{"write_file", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}, true},
		{"write_file", map[string]any{"path": ".git/commondir", "content": "/tmp/x\n"}, true},
		{"write_file", map[string]any{"path": "sub/.git", "content": "gitdir: /tmp/x\n"}, true},
		{"write_file", map[string]any{"path": "fake/config", "content": "[core]\n"}, true},
		{"write_file", map[string]any{"path": "other/commondir", "content": "../.git\n"}, true},
		{"write_file", map[string]any{"path": ".agentls/settings.json", "content": "{}"}, true},
		{"edit_file", map[string]any{"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = sh"}, true},
		{"edit_file", map[string]any{"path": ".gitattributes", "old_string": "text", "new_string": "text eol=lf"}, false},
		{"write_file", map[string]any{"path": "b.txt", "content": "b\n"}, false},
	} {
		asked := ap.count()
		res := call(t, r, tc.tool, tc.args)
		if tc.refused != res.IsError {
			t.Errorf("%s %v = %s; want refused %v", tc.tool, tc.args["path"], res.Text, tc.refused)
		}
		if tc.refused && (ap.count() != asked || !strings.Contains(res.Text, "nothing was written")) {
			t.Errorf("%s %v: asked %d times, said %q; want a refusal before any question", tc.tool, tc.args["path"], ap.count()-asked, res.Text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	if res := call(t, r, "read_file", map[string]any{"path": ".git/config"}); res.IsError || !strings.Contains(res.Text, "[core]") {
		t.Errorf("read_file .git/config = %s; want it read", res.Text)
	}
}

func (a *fixedApprover) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reqs)
}
