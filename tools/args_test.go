package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		raw  string
		want readFileArgs
		err  string // in the message; "" means success
	}{
		{`{"path":"a.go","offset":3,"limit":10}`, readFileArgs{Path: "a.go", Offset: 3, Limit: 10}, ""},
		{`{"file_path":"a.go"}`, readFileArgs{Path: "a.go"}, ""},
		{`{"filePath":"a.go","startLine":"7"}`, readFileArgs{Path: "a.go", Offset: 7}, ""},
		{`{"filename":"a.go","limit":5.0}`, readFileArgs{Path: "a.go", Limit: 5}, ""},
		{`"{\"path\":\"a.go\"}"`, readFileArgs{Path: "a.go"}, ""},
		{`{"path":"a.go","offset":null}`, readFileArgs{Path: "a.go"}, ""},
		{`{"path":"a.go",`, readFileArgs{}, `not valid JSON`},
		{`[1,2]`, readFileArgs{}, `must be a JSON object, not an array`},
		{`{"path":"a.go","bogus":1}`, readFileArgs{}, `unknown argument "bogus" in the arguments; valid arguments: path, offset, limit`},
		{`{"path":"a.go","limit":"ten"}`, readFileArgs{}, `argument "limit" must be an integer, not a string ("ten")`},
		{`{"path":"a.go","limit":2.5}`, readFileArgs{}, `must be an integer`},
		{`{"path":7}`, readFileArgs{}, `argument "path" must be a string, not a number (7)`},
		{`{}`, readFileArgs{}, `missing required argument "path"`},
		{`{"path":"a","file_path":"b"}`, readFileArgs{}, `give "path" twice`},
		{`{"path":"a"} {"path":"b"}`, readFileArgs{}, `more than one JSON value`},
	}
	for _, tt := range tests {
		var got readFileArgs
		err := decodeArgs("read_file", json.RawMessage(tt.raw), &got)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("decodeArgs(%s) = %+v, %v; want %+v", tt.raw, got, err, tt.want)
			}
			continue
		}
		var ae *ArgError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "read_file: ") {
			t.Errorf("decodeArgs(%s) error = %v; want an ArgError containing %q", tt.raw, err, tt.err)
		}
	}
}

func TestDecodeNestedAliases(t *testing.T) {
	var e editFileArgs
	err := decodeArgs("edit_file", json.RawMessage(`{"path":"x","edits":{"old_str":"a","new_str":"","replaceAll":"true"}}`), &e)
	if err != nil || len(e.Edits) != 1 || e.Edits[0] != (editItem{OldString: "a", NewString: "", ReplaceAll: true}) {
		t.Errorf("nested aliases: %+v, %v", e, err)
	}
	err = decodeArgs("edit_file", json.RawMessage(`{"path":"x","edits":[{"old_string":"a"}]}`), &e)
	if err == nil || !strings.Contains(err.Error(), `missing required argument "new_string" in argument "edits[0]"`) {
		t.Errorf("nested missing: %v", err)
	}
	var c runCommandArgs
	if err := decodeArgs("run_command", json.RawMessage(`{"cmd":"ls","working_directory":"sub","timeout_seconds":"30"}`), &c); err != nil || c.Command != "ls" || c.Cwd != "sub" || c.Timeout != 30 {
		t.Errorf("run_command aliases: %+v, %v", c, err)
	}
	var g grepArgs
	if err := decodeArgs("grep", json.RawMessage(`{"regex":"x","include":"*.go","case_insensitive":true}`), &g); err != nil || g.Pattern != "x" || g.Glob != "*.go" || !g.IgnoreCase {
		t.Errorf("grep aliases: %+v, %v", g, err)
	}
	var l listFilesArgs
	if err := decodeArgs("list_files", json.RawMessage(`{"glob":"*.go"}`), &l); err != nil || l.Pattern != "*.go" {
		t.Errorf("list_files glob alias: %+v, %v", l, err)
	}
}

// TestSchemasStable: schemas are valid JSON, byte-identical across
// registries (prompt caching), closed to unknown properties, and list
// required arguments.
func TestSchemasStable(t *testing.T) {
	_, ws := fixture(t, nil)
	a, b := New(Env{Workspace: ws}), New(Env{Workspace: ws})
	defer a.Close()
	defer b.Close()
	for i, t1 := range a.Tools() {
		t2 := b.Tools()[i]
		if t1.Name() != t2.Name() || !bytes.Equal(t1.Schema(), t2.Schema()) || t1.Description() != t2.Description() {
			t.Errorf("%s: definitions differ between registries", t1.Name())
		}
		var s map[string]any
		if err := json.Unmarshal(t1.Schema(), &s); err != nil || s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s: schema %s: %v", t1.Name(), t1.Schema(), err)
		}
		if len(t1.Description()) < 100 {
			t.Errorf("%s: no description", t1.Name())
		}
	}
	want := `{"type":"object","properties":{"path":{"type":"string","description":"file to read (workspace-relative)"},"offset":{"type":"integer","description":"first line to show, 1-based; default 1"},"limit":{"type":"integer","description":"number of lines to show; default 2000"}},"required":["path"],"additionalProperties":false}`
	if got := string(a.Get("read_file").Schema()); got != want {
		t.Errorf("read_file schema =\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(string(a.Get("update_plan").Schema()), `"enum":["pending","in_progress","done","skipped"]`) {
		t.Errorf("update_plan schema lacks the status enum: %s", a.Get("update_plan").Schema())
	}
	var names []string
	for _, t := range a.ReadOnly() {
		names = append(names, t.Name())
	}
	if !reflect.DeepEqual(names, []string{"list_files", "grep", "read_file", "update_plan"}) {
		t.Errorf("ReadOnly() = %v", names)
	}
}

// fuzzArgs feeds random bytes to one tool's decoder: it must never panic,
// fail only with an ArgError, and accept its own re-encoded output.
func fuzzArgs[A any](f *testing.F, tool string, seeds ...string) {
	for _, s := range append(seeds, `{}`, `null`, `[]`, `"x"`, `{"path":1}`, `{"bogus":true}`, `"{\"path\":\"a\"}"`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a A
		err := decodeArgs(tool, data, &a)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Msg == "" {
				t.Fatalf("decodeArgs(%q) = %v; want an ArgError", data, err)
			}
			return
		}
		again, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		// The encoding is a fixed point: decoding it and encoding again
		// gives the same bytes. (Comparing values instead would fail on an
		// empty list that omitempty drops: [] and nil mean the same here.)
		var b A
		if err := decodeArgs(tool, again, &b); err != nil {
			t.Fatalf("re-decode of %s: %v", again, err)
		}
		if twice, err := json.Marshal(b); err != nil || !bytes.Equal(again, twice) {
			t.Fatalf("re-encode of %s = %s, %v; want the same bytes", again, twice, err)
		}
	})
}

func FuzzArgsListFiles(f *testing.F) {
	fuzzArgs[listFilesArgs](f, "list_files", `{"pattern":"**/*.go","path":"a","limit":3}`, `{"glob":"*.go"}`)
}

func FuzzArgsGrep(f *testing.F) {
	fuzzArgs[grepArgs](f, "grep", `{"pattern":"x","path":"a","glob":"*.go","literal":true,"ignore_case":true,"context":2,"limit":5}`)
}

func FuzzArgsReadFile(f *testing.F) {
	fuzzArgs[readFileArgs](f, "read_file", `{"path":"a.go","offset":2,"limit":"3"}`, `{"file_path":"a"}`)
}

func FuzzArgsEditFile(f *testing.F) {
	fuzzArgs[editFileArgs](f, "edit_file", `{"path":"a","old_string":"x","new_string":"y","replace_all":true}`,
		`{"path":"a","edits":[{"old_str":"x","new_str":""}]}`)
}

func FuzzArgsWriteFile(f *testing.F) {
	fuzzArgs[writeFileArgs](f, "write_file", `{"path":"a","content":"x","overwrite_unsaved":true}`)
}

func FuzzArgsRunCommand(f *testing.F) {
	fuzzArgs[runCommandArgs](f, "run_command", `{"command":"ls","cwd":"a","timeout":1.5}`, `{"argv":["go","test"]}`)
}

func FuzzArgsUpdatePlan(f *testing.F) {
	fuzzArgs[updatePlanArgs](f, "update_plan", `{"items":[{"id":"1","text":"x","status":"done"}]}`)
}
