package agent

import (
	"errors"
	"fmt"
)

// State is where a task is in its lifecycle. The set is closed: only the
// constants below exist, and only the transitions in legal are allowed.
type State string

const (
	StateQueued     State = "queued"
	StatePlanning   State = "planning"
	StateExecuting  State = "executing"
	StateValidating State = "validating"
	StateCompleted  State = "completed"
	StateFailed     State = "failed"
	StateCancelled  State = "cancelled"
)

// legal is the transition table. A state missing as a key is terminal.
var legal = map[State][]State{
	StateQueued:     {StatePlanning, StateExecuting, StateFailed, StateCancelled},
	StatePlanning:   {StateExecuting, StateFailed, StateCancelled},
	StateExecuting:  {StateValidating, StateFailed, StateCancelled},
	StateValidating: {StateExecuting, StateCompleted, StateFailed, StateCancelled},
}

// ErrIllegalTransition is returned for a state change the table does not allow.
var ErrIllegalTransition = errors.New("illegal task state transition")

// ErrNotExecuting is returned for a tool call or an edit of a task that is
// not in the executing state: it is rejected, never run or dropped.
var ErrNotExecuting = errors.New("task is not executing")

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled
}

// CanTransition reports whether from -> to is in the transition table.
func CanTransition(from, to State) bool {
	for _, s := range legal[from] {
		if s == to {
			return true
		}
	}
	return false
}

func checkTransition(from, to State) error {
	if !CanTransition(from, to) {
		return fmt.Errorf("%s -> %s: %w", from, to, ErrIllegalTransition)
	}
	return nil
}

// StopReason names why the loop stopped. Every task ends with one.
type StopReason string

const (
	StopAnswered         StopReason = "answered"          // a final answer passed the gates
	StopRepeatedAnswer   StopReason = "repeated_answer"   // the same normalized answer came twice
	StopLoopDetected     StopReason = "loop_detected"     // the same tool call with the same result repeated after a warning
	StopTurnBudget       StopReason = "turn_budget"       // MaxTurns model calls spent
	StopTokenBudget      StopReason = "token_budget"      // MaxTokens spent
	StopTimeBudget       StopReason = "time_budget"       // MaxTime spent
	StopCancelled        StopReason = "cancelled"         // the user or the caller cancelled
	StopModelError       StopReason = "model_error"       // the model service failed permanently
	StopToolError        StopReason = "tool_error"        // a tool failed with an infrastructure error
	StopValidationFailed StopReason = "validation_failed" // the validator model rejected the result, rounds spent
	StopCheckFailed      StopReason = "check_failed"      // the check command kept failing, rounds spent
	StopPlanOpen         StopReason = "plan_open"         // the model kept answering with plan items open
	StopNoEvidence       StopReason = "no_evidence"       // "nothing found" without a real search, rounds spent
	StopEmptyAnswer      StopReason = "empty_answer"      // the model kept answering with nothing
	StopNoChange         StopReason = "no_change"         // an edit task claimed a change it never made, after being asked
)
