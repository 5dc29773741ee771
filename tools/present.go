package tools

import (
	"encoding/json"
	"strings"
)

// A tool describes its own calls: how a call looks when it starts (title,
// kind, the files it reads or changes) and, when it ends, what it found
// (the lines it read, the files a search matched, the diff it made, a
// program's output). Faces render a Presentation; none knows a tool by
// name, so a new tool (built-in, language-server or MCP) needs no edit in
// any face.

// Kind is what a call does, as editors group and mark calls (the ACP
// ToolKind set).
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindFetch   Kind = "fetch"
	KindThink   Kind = "think"
	KindOther   Kind = "other"
)

// Location is a place a call read or changed.
type Location struct {
	Path string // workspace-relative, as the call named it
	Line int    // 1-based; 0 for the file as a whole
}

// Diff is one file a call changed: its whole text before and after.
type Diff struct {
	Path     string // workspace-relative
	Old, New string
	Created  bool // the call made the file
}

// Show is how a face shows the text of a finished call's result.
type Show uint8

const (
	// ShowBlock: the whole result text, as a code block.
	ShowBlock Show = iota
	// ShowLine: the result's first line only; the content itself is shown
	// where it is (the file read, the diff made).
	ShowLine
)

// Presentation is how a tool call looks to people.
type Presentation struct {
	Title     string // one line naming the call: "Read a.go", "Run `go test ./...`"
	Activity  string // what the agent is doing while the call runs: "reading a.go"
	Kind      Kind
	Locations []Location
	// Diffs are the files the call changed (set when it ended).
	Diffs []Diff
	// Command is the program the call ran, with its exit and output (set
	// when it ended).
	Command *CommandOutput
	// Outcome is one line of what the call found, shown as what the agent
	// did once the call is over ("references of Total (a.go:4) via gopls:
	// 14 in 6 file(s)"); "" for calls whose result says nothing new.
	Outcome string
	Show    Show
	// AsPlan: the call sets the task's plan, which faces show as the plan
	// itself rather than as a call.
	AsPlan bool
}

// Over is p with every field p leaves empty taken from base: a finished
// call's presentation over the one it started with.
func (p Presentation) Over(base Presentation) Presentation {
	if p.Title == "" {
		p.Title = base.Title
	}
	if p.Activity == "" {
		p.Activity = base.Activity
	}
	if p.Kind == "" {
		p.Kind = base.Kind
	}
	if p.Locations == nil {
		p.Locations = base.Locations
	}
	if p.Diffs == nil {
		p.Diffs = base.Diffs
	}
	if p.Command == nil {
		p.Command = base.Command
	}
	if p.Outcome == "" {
		p.Outcome = base.Outcome
	}
	if p.Show == ShowBlock {
		p.Show = base.Show
	}
	p.AsPlan = p.AsPlan || base.AsPlan
	return p
}

// Describe is how a call of t with args looks (res: nil at its start, its
// result at its end): what t says of it, over a presentation made from its
// name, its effects and the arguments it names (a path, a file, its first
// required text argument). t may be nil (a tool the task does not offer).
func Describe(t Tool, name string, args json.RawMessage, res *Result) Presentation {
	g := generic(t, name, args)
	if t == nil {
		return g
	}
	return t.Present(args, res).Over(g)
}

// DescribeCall is Describe for a built-in tool known by name only (a call
// read back from a stored task); other tools get the generic presentation.
func DescribeCall(name string, args json.RawMessage) Presentation {
	if f := builtinPresent[name]; f != nil {
		return f(args, nil).Over(generic(nil, name, args))
	}
	return generic(nil, name, args)
}

// builtinPresent are the presenters of the built-in tools by name: newTool
// gives each its own, and DescribeCall reads a stored call with it. No
// face reads this map.
var builtinPresent = map[string]func(json.RawMessage, *Result) Presentation{
	"list_files":  presentWith(presentListFiles),
	"grep":        presentWith(presentGrep),
	"read_file":   presentWith(presentReadFile),
	"edit_file":   presentWith(presentEditFile),
	"write_file":  presentWith(presentWriteFile),
	"run_command": presentWith(presentRunCommand),
	"update_plan": presentWith(presentUpdatePlan),
}

// generic is the presentation of a tool that says nothing of its own: its
// name, the file its arguments name, a kind from its effects.
func generic(t Tool, name string, args json.RawMessage) Presentation {
	p := Presentation{Title: name, Activity: "calling " + name, Kind: KindOther}
	if t != nil {
		switch e := t.Effects(); {
		case e.Has(RunsProgram):
			p.Kind = KindExecute
		case e.Has(WritesFiles):
			p.Kind = KindEdit
		}
	}
	var a struct {
		Path string `json:"path"`
		File string `json:"file"`
		Line int    `json:"line"`
	}
	if json.Unmarshal(args, &a) == nil {
		f := a.Path
		if f == "" {
			f = a.File
		}
		if f != "" && !strings.ContainsAny(f, "\n\r") {
			p.Title = name + " " + f
			p.Locations = []Location{{Path: f, Line: max(a.Line, 0)}}
			return p
		}
	}
	if t == nil {
		return p
	}
	// A tool that names no file (an MCP server's): its first required
	// text argument says what the call is about.
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	var values map[string]any
	if json.Unmarshal(t.Schema(), &schema) != nil || json.Unmarshal(args, &values) != nil {
		return p
	}
	for _, k := range schema.Required {
		if v, ok := values[k].(string); ok && schema.Properties[k].Type == "string" && strings.TrimSpace(v) != "" {
			p.Title = name + " " + shown(v)
			break
		}
	}
	return p
}

// lenient decodes what it can of args into a (a presentation needs no
// strictness: a bad call is described as far as it can be).
func lenient[A any](args json.RawMessage) *A {
	var a A
	_ = json.Unmarshal(args, &a)
	return &a
}

// at is the one location of a path argument, or none.
func at(path string, line int) []Location {
	if path == "" {
		return nil
	}
	return []Location{{Path: path, Line: max(line, 0)}}
}

// firstLine is the first non-empty line of s, trimmed.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// shown is s on one line, cut to 80 runes: an argument inside an activity.
func shown(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return s
}

// presentWith adapts a presenter of decoded arguments.
func presentWith[A any](f func(a *A, res *Result) Presentation) func(json.RawMessage, *Result) Presentation {
	return func(args json.RawMessage, res *Result) Presentation { return f(lenient[A](args), res) }
}

// Presenting is t, made by Define, describing its calls with f.
func Presenting[A any](t Tool, f func(a *A, res *Result) Presentation) Tool {
	tt, ok := t.(*tool[A])
	if !ok {
		panic("tools.Presenting: not a tool made by Define with these arguments")
	}
	tt.present = presentWith(f)
	return tt
}
