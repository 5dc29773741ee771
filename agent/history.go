package agent

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentls/agentls/agent/llm"
)

// notExecuted is the text of a synthetic result for a tool call whose
// result is missing from the history.
const notExecuted = "error: this tool call was not executed (the turn was interrupted); call it again if you still need it"

// RepairHistory returns a history every provider accepts: each
// assistant tool call is followed by exactly one result, a missing result
// becomes a synthetic error result, a result whose call is not in the
// assistant message just before it is dropped, incomplete calls (of a cut
// response) are removed, arguments that are not a JSON object (a weak
// model's garbage) are sent as {} (Ollama, vLLM and llama.cpp refuse a
// history with unparsable arguments, so every later call would fail; the
// call's error result quotes what the model sent), and an empty assistant
// message gets placeholder text. It reports how many messages it added and
// dropped. msgs is not modified.
func RepairHistory(msgs []llm.Message) (out []llm.Message, added, dropped int) {
	out = make([]llm.Message, 0, len(msgs)+2)
	// pending holds the call IDs of the last assistant message still
	// waiting for results, in call order.
	var pending []llm.ToolCall
	answered := map[string]bool{}
	flush := func() {
		for _, c := range pending {
			if !answered[c.ID] {
				out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: notExecuted})
				added++
			}
		}
		pending = nil
		answered = map[string]bool{}
	}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			ok := false
			for _, c := range pending {
				if c.ID == m.ToolCallID && !answered[c.ID] {
					ok = true
					break
				}
			}
			if !ok {
				dropped++
				continue
			}
			answered[m.ToolCallID] = true
			out = append(out, m)
		case llm.RoleAssistant:
			flush()
			calls := m.ToolCalls[:0:0]
			for _, c := range m.ToolCalls {
				if c.Incomplete || c.ID == "" {
					continue
				}
				c.Arguments = wireArgs(c.Arguments)
				calls = append(calls, c)
			}
			if len(calls) != len(m.ToolCalls) {
				dropped += len(m.ToolCalls) - len(calls)
			}
			m.ToolCalls = calls
			if m.Content == "" && len(calls) == 0 {
				m.Content = "(no answer)"
			}
			out = append(out, m)
			pending = calls
		default:
			flush()
			out = append(out, m)
		}
	}
	flush()
	return out, added, dropped
}

// ValidHistory reports the first problem RepairHistory would fix, or "" when
// the history is valid. Tests use it to assert on what a model received.
func ValidHistory(msgs []llm.Message) string {
	var pending map[string]bool
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			if !pending[m.ToolCallID] {
				return "orphan tool result " + m.ToolCallID + " at " + strconv.Itoa(i)
			}
			delete(pending, m.ToolCallID)
		default:
			for id := range pending {
				return "tool call " + id + " has no result before message " + strconv.Itoa(i)
			}
			pending = nil
			if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
				pending = map[string]bool{}
				for _, c := range m.ToolCalls {
					if !isJSONObject(c.Arguments) {
						return "tool call " + c.ID + " has arguments that are not a JSON object at " + strconv.Itoa(i)
					}
					pending[c.ID] = true
				}
			}
		}
	}
	for id := range pending {
		return "tool call " + id + " has no result at the end"
	}
	return ""
}

// wireArgs returns args when it is a JSON object, else "{}": the form of a
// call's arguments every provider accepts in a history.
func wireArgs(args string) string {
	if isJSONObject(args) {
		return args
	}
	return "{}"
}

// isJSONObject reports whether s is one valid JSON object.
func isJSONObject(s string) bool {
	b := bytes.TrimSpace([]byte(s))
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// historyCalls returns calls with their arguments in wire form (see
// wireArgs), sharing nothing with calls; nil stays nil.
func historyCalls(calls []llm.ToolCall) []llm.ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]llm.ToolCall, len(calls))
	for i, c := range calls {
		c.Arguments = wireArgs(c.Arguments)
		out[i] = c
	}
	return out
}
