// Package eval measures how well the agent does its job with a given
// model: it runs a suite of tasks, each in a fresh copy of a small fixture
// repository, through the same session host as every face (session.Host),
// and scores each with a check the model never sees (tests that must
// pass, hidden tests copied in after the task, an answer that must name a
// fact, files that must not change). Results are written as JSON so two
// runs compare (Compare). With Options.Scripted each task is answered by
// its own scripted model (agent/llm/fakemodel), which tests the harness
// itself; otherwise the model the settings configure answers.
package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"golang.org/x/tools/txtar"
)

// Task is one task of the suite, read from a txtar file: a task.json
// section (TaskSpec), the scripted model's answers (model.json), files laid
// over the fixture before the task (ws/PATH) and hidden files copied in
// after it, before the check runs (check/PATH).
type Task struct {
	TaskSpec
	// Name is the file's name without .txtar.
	Name string
	// Script answers the task in a scripted run.
	Script fakemodel.Script
	// Overlay are the files written over the fixture before the task;
	// Hidden those written after it, for the check only.
	Overlay, Hidden map[string][]byte
}

// TaskSpec is the task.json section of a task file.
type TaskSpec struct {
	Kind    agent.Kind `json:"kind"`    // ask, edit or plan
	Fixture string     `json:"fixture"` // NAME of the suite's fixtures/NAME.txtar
	Prompt  string     `json:"prompt"`
	// What is what the task stands for, a category of what users ask:
	// question, callers, fix-test, rename, feature, refuse, plan.
	What string `json:"what"`
	// MinCalls is the fewest model calls that do the task (the scripted
	// run makes exactly these).
	MinCalls int   `json:"minCalls"`
	Check    Check `json:"check"`
}

// Check is how a task is scored, after it ends. Every part set must hold.
type Check struct {
	// Status the task must end with; default "completed".
	Status agent.State `json:"status,omitempty"`
	// Answer are regular expressions (RE2, case-insensitive) the answer
	// must match; NotAnswer ones it must not.
	Answer    []string `json:"answer,omitempty"`
	NotAnswer []string `json:"notAnswer,omitempty"`
	// Run is a shell command that must exit 0 in the workspace after the
	// task, with the hidden files in place. For an edit task it must fail
	// before the task (in a separate copy), so a task cannot be solved by
	// doing nothing.
	Run string `json:"run,omitempty"`
	// Unchanged are globs of files (doublestar, workspace-relative; "**"
	// for all) that must be byte-identical after the task and still exist.
	Unchanged []string `json:"unchanged,omitempty"`
	// Changed are files that must differ after the task (or be new).
	Changed []string `json:"changed,omitempty"`
	// Contains maps a file to regular expressions its text must match;
	// Absent maps a glob to ones no matching file may match.
	Contains map[string][]string `json:"contains,omitempty"`
	Absent   map[string][]string `json:"absent,omitempty"`
	// PlanFiles are files the plan of a plan task must name.
	PlanFiles []string `json:"planFiles,omitempty"`
	// NoCommand are regular expressions no command the task ran may match.
	NoCommand []string `json:"noCommand,omitempty"`
}

// Suite is a set of tasks and the fixtures they run in.
type Suite struct {
	Tasks []Task
	// Fixtures are the fixture repositories by name: each file's
	// workspace-relative path and content.
	Fixtures map[string]map[string][]byte
}

// LoadSuite reads every tasks/*.txtar of fsys, in name order, and the
// fixtures they name (fixtures/NAME.txtar: one section per file).
func LoadSuite(fsys fs.FS) (*Suite, error) {
	files, err := fs.Glob(fsys, "tasks/*.txtar")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("the suite has no tasks/*.txtar")
	}
	sort.Strings(files)
	s := &Suite{Fixtures: map[string]map[string][]byte{}}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		t, err := ParseTask(strings.TrimSuffix(path.Base(f), ".txtar"), data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if _, ok := s.Fixtures[t.Fixture]; !ok {
			fx, err := loadFixture(fsys, t.Fixture)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			s.Fixtures[t.Fixture] = fx
		}
		s.Tasks = append(s.Tasks, t)
	}
	return s, nil
}

// loadFixture reads fixtures/NAME.txtar.
func loadFixture(fsys fs.FS, name string) (map[string][]byte, error) {
	data, err := fs.ReadFile(fsys, "fixtures/"+name+".txtar")
	if err != nil {
		return nil, fmt.Errorf("fixture %q: %w", name, err)
	}
	files := map[string][]byte{}
	for _, f := range txtar.Parse(data).Files {
		p, err := relFile(f.Name)
		if err != nil {
			return nil, fmt.Errorf("fixture %q: %w", name, err)
		}
		files[p] = f.Data
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("fixture %q has no files", name)
	}
	return files, nil
}

// ParseTask reads one task file.
func ParseTask(name string, data []byte) (Task, error) {
	t := Task{Name: name, Overlay: map[string][]byte{}, Hidden: map[string][]byte{}}
	ar := txtar.Parse(data)
	var spec, script bool
	for _, f := range ar.Files {
		switch {
		case f.Name == "task.json":
			dec := json.NewDecoder(bytes.NewReader(f.Data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&t.TaskSpec); err != nil {
				return t, fmt.Errorf("task.json: %w", err)
			}
			spec = true
		case f.Name == "model.json":
			s, err := fakemodel.ParseScript(f.Data)
			if err != nil {
				return t, fmt.Errorf("model.json: %w", err)
			}
			t.Script, script = s, true
		case strings.HasPrefix(f.Name, "ws/"):
			p, err := relFile(strings.TrimPrefix(f.Name, "ws/"))
			if err != nil {
				return t, err
			}
			t.Overlay[p] = f.Data
		case strings.HasPrefix(f.Name, "check/"):
			p, err := relFile(strings.TrimPrefix(f.Name, "check/"))
			if err != nil {
				return t, err
			}
			t.Hidden[p] = f.Data
		default:
			return t, fmt.Errorf("unknown section %q (want task.json, model.json, ws/PATH or check/PATH)", f.Name)
		}
	}
	switch {
	case !spec:
		return t, errors.New("no task.json section")
	case !script:
		return t, errors.New("no model.json section (the scripted model's answers)")
	case strings.TrimSpace(t.Prompt) == "":
		return t, errors.New("task.json: empty prompt")
	case t.Fixture == "" || strings.ContainsAny(t.Fixture, `/\`) || t.Fixture[0] == '.':
		return t, fmt.Errorf("task.json: fixture %q: want the NAME of fixtures/NAME.txtar", t.Fixture)
	case t.MinCalls < 1:
		return t, errors.New("task.json: minCalls must be at least 1")
	}
	switch t.Kind {
	case agent.KindAsk, agent.KindEdit, agent.KindPlan:
	default:
		return t, fmt.Errorf("task.json: kind %q: want ask, edit or plan", t.Kind)
	}
	if len(t.Hidden) > 0 && t.Check.Run == "" {
		return t, errors.New("check/ files without a check.run command to use them")
	}
	if err := t.Check.compile(); err != nil {
		return t, fmt.Errorf("task.json: check: %w", err)
	}
	return t, nil
}

// relFile is a clean relative file path of a section name.
func relFile(p string) (string, error) {
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) || strings.Contains(c, `\`) {
		return "", fmt.Errorf("section path %q is not a relative path inside the workspace", p)
	}
	return c, nil
}
