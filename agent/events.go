package agent

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// EventKind names what an Event reports.
type EventKind string

const (
	EventState        EventKind = "state"         // State changed
	EventPlan         EventKind = "plan"          // Plan replaced (every update_plan)
	EventText         EventKind = "text"          // Text: a delta of the model's answer
	EventThought      EventKind = "thought"       // Text: a delta of the model's reasoning (models that stream it)
	EventToolStarted  EventKind = "tool_started"  // CallID, Tool, Args, RawArgs, Present
	EventToolFinished EventKind = "tool_finished" // CallID, Tool, Args, RawArgs, Duration, IsError, Text (first line), Call, Present
	EventRetry        EventKind = "retry"         // Retry: a transient model failure being retried
	EventUsage        EventKind = "usage"         // Usage of one model call, Total so far
	EventNote         EventKind = "note"          // Text: a message the loop injected (nudge, cut, loop warning)
	EventResult       EventKind = "result"        // Result: the final result (always the last event)
)

// Event is one thing the loop reports. The LSP layer turns events into
// $/progress and messages; the command line into stderr lines.
type Event struct {
	TaskID string
	Kind   EventKind
	Time   time.Time
	State  State       // EventState
	Plan   *tools.Plan // EventPlan (a copy)
	Text   string      // EventText, EventThought, EventNote, EventToolFinished (summary line)
	Tool   string      // EventToolStarted/Finished: the tool name
	Args   string      // EventToolStarted/Finished: a one-line summary of the arguments
	// CallID is the model's id of the call (EventToolStarted/Finished): a
	// finish pairs with its start by it, and approval requests carry it.
	CallID  string
	RawArgs json.RawMessage // EventToolStarted/Finished: the arguments as the model sent them
	// Call is the whole result of the call (EventToolFinished), with its
	// structured Data, for faces that show more than a line.
	Call *tools.Result
	// Present is how the call looks to people (EventToolStarted/Finished),
	// as its tool describes it: faces render it and never name a tool.
	Present  *tools.Presentation
	Duration time.Duration // EventToolFinished
	IsError  bool          // EventToolFinished
	Retry    *llm.Event    // EventRetry
	Usage    llm.Usage     // EventUsage: this call
	Total    llm.Usage     // EventUsage: the task so far
	Result   *Result       // EventResult
	// Problem marks an EventNote that reports a failure of the user's own
	// programs (an MCP server that did not start or failed a call, a hook
	// that blocked or failed): faces show its whole Text where the user
	// looks, not only its first line.
	Problem bool
}

// Sink receives a task's events. Event must not block for long; it is
// called from the task's goroutine (and, for text deltas, the model stream).
type Sink interface {
	Event(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

// Event calls f(e).
func (f SinkFunc) Event(e Event) { f(e) }

// taskSink serialises a task's events and makes sure that once the task is
// cancelled, nothing but the terminal state change and the (cancelled)
// result is published. A Sink may call Task.Cancel from inside Event.
type taskSink struct {
	cancelled atomic.Bool
	mu        sync.Mutex // serialises calls to out; guards closed
	out       Sink
	closed    bool
}

func (s *taskSink) emit(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil || s.closed {
		return
	}
	if s.cancelled.Load() {
		switch {
		case e.Kind == EventState && e.State == StateCancelled:
		case e.Kind == EventResult && e.Result != nil && e.Result.Status == StateCancelled:
		default:
			return
		}
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.out.Event(e)
	if e.Kind == EventResult {
		s.closed = true
	}
}

// cancel makes every later event except the terminal ones a no-op.
func (s *taskSink) cancel() { s.cancelled.Store(true) }
