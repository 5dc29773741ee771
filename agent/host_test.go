package agent

import (
	"context"
	"fmt"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/store"
)

// testHost starts tasks as agent/session's host does: one registry, a
// guard per task with the task's tools built on it, and, with a store,
// the journal's writer as the recorder and what the journal reads back
// (lessons, the task a follow-up of an earlier run continues, the record
// of an interrupted task) as the task's inputs.
type testHost struct {
	cfg   Config
	model Model
	tools toolSet
	st    *store.Store // nil: nothing recorded
}

func newRunner(st *store.Store, cfg Config, m Model, ts toolSet) *testHost {
	if cfg.Registry == nil {
		cfg.Registry = NewTaskRegistry()
	}
	return &testHost{cfg: cfg, model: m, tools: ts, st: st}
}

// Task returns the task with id from the host's registry, or nil.
func (h *testHost) Task(id string) *Task { return h.cfg.Registry.Task(id) }

// config is the task's configuration: reads first, then the tools.
func (h *testHost) config(ctx context.Context, spec TaskSpec, fresh bool) (Config, error) {
	cfg := h.cfg
	cfg.Model = h.model
	if h.st != nil {
		cfg.Recorder = journal.NewWriter(h.st)
		if fresh {
			cfg.Lessons = journal.Lessons(ctx, h.st, LessonAbout(spec))
		}
		if id := spec.FollowUp; fresh && id != "" && cfg.Registry.Task(id) == nil {
			e, err := journal.Earlier(ctx, h.st, id)
			if err != nil {
				return cfg, err
			}
			cfg.Earlier = e
		}
	}
	cfg.Guard = NewGuard()
	cfg.Tools = h.tools(cfg.Guard)
	return cfg, nil
}

func (h *testHost) Start(ctx context.Context, spec TaskSpec, sink Sink) (*Task, error) {
	if spec.ResumeID != "" {
		return h.Resume(ctx, spec.ResumeID, sink)
	}
	cfg, err := h.config(ctx, spec, true)
	if err != nil {
		return nil, fmt.Errorf("start task: %w", err)
	}
	return Start(ctx, cfg, spec, sink)
}

func (h *testHost) Run(ctx context.Context, spec TaskSpec, sink Sink) (*Result, error) {
	t, err := h.Start(ctx, spec, sink)
	if err != nil {
		return nil, err
	}
	<-t.Done()
	return t.Result(), nil
}

// Resume continues the interrupted stored task id.
func (h *testHost) Resume(ctx context.Context, id string, sink Sink) (*Task, error) {
	var st journal.TaskLoader
	if h.st != nil {
		st = h.st
	}
	r, err := journal.Resume(ctx, st, id, h.cfg.Files, h.cfg.Root)
	if err != nil {
		return nil, err
	}
	spec, err := ResumedSpec(r)
	if err != nil {
		return nil, err
	}
	cfg, err := h.config(ctx, spec, len(r.History) == 0)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", id, err)
	}
	return Continue(ctx, cfg, r, sink)
}
