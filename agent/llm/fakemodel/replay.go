package fakemodel

import (
	"encoding/json"
	"fmt"

	"github.com/agentls/agentls/agent/llm"
)

// FromExchanges turns a flight recording into a script that answers the
// same conversation the same way, turn after turn: a user's bad run becomes
// a deterministic regression test. With failures, the recorded failed
// attempts come back as HTTP errors (with their Retry-After), so the retry
// path is replayed too. A call that failed for good is replayed as its last
// HTTP error, or skipped when it failed without one.
func FromExchanges(xs []llm.Exchange, failures bool) Script {
	var s Script
	for _, x := range xs {
		if failures || x.Message == nil {
			for i, f := range x.Failures {
				last := i == len(x.Failures)-1 && x.Message == nil
				if f.Status == 0 || (!failures && !last) {
					continue
				}
				t := Turn{Name: fmt.Sprintf("call %d attempt %d", x.Seq, f.Attempt), Status: f.Status, ErrorCode: f.Code}
				if f.RetryAfterMs > 0 {
					t.Headers = map[string]string{"Retry-After-Ms": fmt.Sprint(f.RetryAfterMs)}
				}
				s.Turns = append(s.Turns, t)
			}
		}
		if x.Message == nil {
			continue
		}
		u := x.Usage
		t := Turn{
			Name:         fmt.Sprintf("call %d", x.Seq),
			Text:         x.Message.Content,
			Reasoning:    x.Message.Reasoning,
			FinishReason: string(x.FinishReason),
			Usage:        &u,
		}
		for _, c := range x.Message.ToolCalls {
			t.ToolCalls = append(t.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: Args(c.Arguments)})
		}
		s.Turns = append(s.Turns, t)
	}
	return s
}

// Marshal writes s as indented JSON, the form ParseScript reads.
func (s Script) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
