package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestToolsDescribeTheirCalls: each built-in tool describes a call when it
// starts (title, activity, kind, place) and when it ends (what it found:
// the lines read, the files matched, the diff made, the program's output),
// from a real run on real files.
func TestToolsDescribeTheirCalls(t *testing.T) {
	_, ws := fixture(t, map[string]string{"a.go": "package a\n\nfunc A() {}\n", "sub/b.go": "package sub\n// TODO b\n"})
	r := newReg(t, Env{Workspace: ws})
	for _, tc := range []struct {
		tool, args      string
		title, activity string
		kind            Kind
		start, end      []Location
		show            Show
		diffs, command  bool
		plan            bool
	}{
		{tool: "read_file", args: `{"path":"a.go","offset":2}`, title: "Read a.go", activity: "reading a.go", kind: KindRead,
			start: []Location{{Path: "a.go", Line: 2}}, end: []Location{{Path: "a.go", Line: 2}}, show: ShowLine},
		{tool: "read_file", args: `{"path":"a.go"}`, title: "Read a.go", activity: "reading a.go", kind: KindRead,
			start: []Location{{Path: "a.go"}}, end: []Location{{Path: "a.go", Line: 1}}, show: ShowLine},
		{tool: "list_files", args: `{"path":"sub"}`, title: "List sub", activity: "listing sub", kind: KindRead,
			start: []Location{{Path: "sub"}}, end: []Location{{Path: "sub"}}},
		{tool: "grep", args: `{"pattern":"TODO"}`, title: "Search `TODO`", activity: "searching for TODO", kind: KindSearch,
			end: []Location{{Path: "sub/b.go"}}},
		{tool: "edit_file", args: `{"path":"a.go","old_string":"func A() {}","new_string":"func A() { _ = 1 }"}`, title: "Edit a.go",
			activity: "editing a.go", kind: KindEdit, start: []Location{{Path: "a.go"}}, end: []Location{{Path: "a.go", Line: 3}}, show: ShowLine, diffs: true},
		{tool: "write_file", args: `{"path":"c.txt","content":"c\n"}`, title: "Write c.txt", activity: "writing c.txt", kind: KindEdit,
			start: []Location{{Path: "c.txt"}}, end: []Location{{Path: "c.txt"}}, show: ShowLine, diffs: true},
		{tool: "run_command", args: `{"argv":["echo","hi"]}`, title: "Run `echo hi`", activity: "running echo hi", kind: KindExecute, command: true},
		{tool: "update_plan", args: `{"items":[{"id":"1","text":"x","status":"pending"}]}`, title: "Update the plan", activity: "updating the plan", kind: KindThink, plan: true},
	} {
		tl := r.Get(tc.tool)
		start := Describe(tl, tc.tool, json.RawMessage(tc.args), nil)
		if start.Title != tc.title || start.Activity != tc.activity || start.Kind != tc.kind || !reflect.DeepEqual(start.Locations, tc.start) || start.AsPlan != tc.plan {
			t.Errorf("%s %s starts as %+v; want title %q, activity %q, kind %s, places %v, plan %v", tc.tool, tc.args, start, tc.title, tc.activity, tc.kind, tc.start, tc.plan)
		}
		res := call(t, r, tc.tool, tc.args)
		if res.IsError {
			t.Fatalf("%s %s: %s", tc.tool, tc.args, res.Text)
		}
		end := res.Present
		if end == nil {
			t.Fatalf("%s: the result carries no presentation", tc.tool)
		}
		if end.Title != tc.title || end.Kind != tc.kind || !reflect.DeepEqual(end.Locations, tc.end) || end.Show != tc.show {
			t.Errorf("%s %s ends as %+v; want title %q, kind %s, places %v, show %d", tc.tool, tc.args, *end, tc.title, tc.kind, tc.end, tc.show)
		}
		if (len(end.Diffs) > 0) != tc.diffs || (end.Command != nil) != tc.command {
			t.Errorf("%s: diffs %v, command %+v; want diffs %v, command %v", tc.tool, end.Diffs, end.Command, tc.diffs, tc.command)
		}
	}
	// The diff is the change as written.
	res := call(t, r, "edit_file", `{"path":"sub/b.go","old_string":"TODO b","new_string":"DONE b"}`)
	want := []Diff{{Path: "sub/b.go", Old: "package sub\n// TODO b\n", New: "package sub\n// DONE b\n"}}
	if res.Present == nil || !reflect.DeepEqual(res.Present.Diffs, want) {
		t.Errorf("edit diff = %+v; want %+v", res.Present, want)
	}
	res = call(t, r, "run_command", `{"argv":["echo","hi"]}`)
	if c := res.Present.Command; c == nil || c.ExitCode != 0 || !strings.Contains(c.Stdout, "hi") {
		t.Errorf("command output = %+v; want exit 0 and hi", c)
	}
}

// fakeMCP is a tool that says nothing of its calls, like an MCP server's.
type fakeMCP struct{ schema string }

func (f fakeMCP) Name() string                                  { return "mcp__docs__search" }
func (f fakeMCP) Description() string                           { return "" }
func (f fakeMCP) Schema() json.RawMessage                       { return json.RawMessage(f.schema) }
func (f fakeMCP) ReadOnly() bool                                { return false }
func (f fakeMCP) Effects() Effect                               { return External }
func (f fakeMCP) Present(json.RawMessage, *Result) Presentation { return Presentation{} }
func (f fakeMCP) Run(context.Context, json.RawMessage) (Result, error) {
	return Result{}, nil
}

// TestGenericPresentation: a tool that describes nothing gets its name,
// the file its arguments name or its first required text argument, and a
// kind from its effects; a tool the task lacks gets its name.
func TestGenericPresentation(t *testing.T) {
	schema := `{"type":"object","properties":{"limit":{"type":"integer"},"query":{"type":"string"}},"required":["limit","query"]}`
	for _, tc := range []struct {
		tl    Tool
		args  string
		title string
		kind  Kind
		locs  []Location
	}{
		{fakeMCP{schema}, `{"limit":3,"query":"sandbox\nrules"}`, "mcp__docs__search sandbox rules", KindOther, nil},
		{fakeMCP{schema}, `{"file":"x/y.md","line":4}`, "mcp__docs__search x/y.md", KindOther, []Location{{Path: "x/y.md", Line: 4}}},
		{nil, `{"path":"a.go"}`, "mcp__docs__search a.go", KindOther, []Location{{Path: "a.go"}}},
		{fakeMCP{schema}, `not json`, "mcp__docs__search", KindOther, nil},
	} {
		p := Describe(tc.tl, "mcp__docs__search", json.RawMessage(tc.args), nil)
		if p.Title != tc.title || p.Kind != tc.kind || p.Activity != "calling mcp__docs__search" || !reflect.DeepEqual(p.Locations, tc.locs) {
			t.Errorf("Describe(%s) = %+v; want title %q, kind %s, places %v", tc.args, p, tc.title, tc.kind, tc.locs)
		}
	}
	// A stored call of a built-in tool is described by that tool.
	if p := DescribeCall("run_command", json.RawMessage(`{"command":"make"}`)); p.Title != "Run `make`" || p.Kind != KindExecute {
		t.Errorf("DescribeCall(run_command) = %+v", p)
	}
	if p := DescribeCall("update_plan", nil); !p.AsPlan {
		t.Errorf("DescribeCall(update_plan) = %+v; want shown as the plan", p)
	}
}
