package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// errBadChunk marks a streamed chunk that is not valid JSON.
var errBadChunk = errors.New("malformed chunk in the answer stream")

// reasoningChunk reads the `reasoning` delta field (OpenRouter, Ollama,
// vLLM) that go-openai drops.
type reasoningChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Reasoning string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
}

// callBuf is a tool call being assembled.
type callBuf struct {
	id   string
	name string
	args strings.Builder
}

// assembler builds one answer from streamed chunks. Tool calls are keyed by
// index, and a new call starts when a delta carries an ID different from the
// current call's at that index (Ollama sends every parallel call at index 0)
// or when the index is missing and the ID changes.
type assembler struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []*callBuf
	byIndex   map[int]*callBuf
	finish    string
	usage     *openai.Usage
	gotToken  bool // a content, reasoning or tool-call delta arrived

	// Limits (Config.MaxResponseBytes, MaxToolArgsBytes); 0 means none.
	maxBytes, maxArgs int64
	size              int64 // text, reasoning and arguments so far
}

// add reads one raw chunk (the JSON after "data: ") and reports text and
// reasoning deltas through emit.
func (a *assembler) add(raw []byte, emit func(Event)) error {
	var ch openai.ChatCompletionStreamResponse
	if err := json.Unmarshal(raw, &ch); err != nil {
		return fmt.Errorf("%w: %v", errBadChunk, err)
	}
	if ch.Usage != nil {
		u := *ch.Usage
		a.usage = &u
	}
	var rc reasoningChunk
	if bytes.Contains(raw, []byte(`"reasoning"`)) {
		_ = json.Unmarshal(raw, &rc) // best effort: the chunk itself parsed
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // n is 1: other choices are not ours
		}
		d := choice.Delta
		r := d.ReasoningContent
		for _, c := range rc.Choices {
			if c.Index == 0 {
				r += c.Delta.Reasoning
			}
		}
		a.size += int64(len(r) + len(d.Content))
		for _, tc := range d.ToolCalls {
			a.size += int64(len(tc.Function.Arguments))
		}
		if a.maxBytes > 0 && a.size > a.maxBytes {
			return &tooLargeError{what: "response", limit: a.maxBytes}
		}
		if r != "" {
			a.gotToken = true
			a.reasoning.WriteString(r)
			emit(Event{Kind: EventReasoning, Text: r})
		}
		if d.Content != "" {
			a.gotToken = true
			a.text.WriteString(d.Content)
			emit(Event{Kind: EventText, Text: d.Content})
		}
		for _, tc := range d.ToolCalls {
			a.gotToken = true
			if cur := a.addCall(tc); a.maxArgs > 0 && int64(cur.args.Len()) > a.maxArgs {
				return &tooLargeError{what: "arguments of one tool call (" + cur.name + ")", limit: a.maxArgs}
			}
		}
		if d.FunctionCall != nil { // legacy function_call streaming
			a.gotToken = true
			a.addCall(openai.ToolCall{Function: *d.FunctionCall, Index: new(int)})
		}
		if choice.FinishReason != "" {
			a.finish = string(choice.FinishReason)
		}
	}
	return nil
}

func (a *assembler) addCall(tc openai.ToolCall) *callBuf {
	var cur *callBuf
	if tc.Index != nil {
		if c, ok := a.byIndex[*tc.Index]; ok && (tc.ID == "" || c.id == "" || tc.ID == c.id) {
			cur = c
		}
	} else if n := len(a.calls); n > 0 {
		if last := a.calls[n-1]; tc.ID == "" || last.id == "" || tc.ID == last.id {
			cur = last
		}
	}
	if cur == nil {
		cur = &callBuf{}
		a.calls = append(a.calls, cur)
	}
	if tc.Index != nil {
		if a.byIndex == nil {
			a.byIndex = map[int]*callBuf{}
		}
		a.byIndex[*tc.Index] = cur
	}
	if cur.id == "" {
		cur.id = tc.ID
	}
	if n := tc.Function.Name; n != "" && n != cur.name {
		cur.name += n // some servers stream the name in pieces; repeats are ignored
	}
	cur.args.WriteString(tc.Function.Arguments)
	return cur
}

// result returns the assembled message. sawDone tells whether the stream
// ended with [DONE]; a stream that ended with neither a finish reason nor
// [DONE] broke midway and its answer must not be used.
func (a *assembler) result(sawDone bool) (Message, FinishReason, error) {
	if a.finish == "" && !sawDone {
		return Message{}, "", errStreamBroken
	}
	msg := Message{Role: RoleAssistant, Content: a.text.String(), Reasoning: a.reasoning.String()}
	finish := FinishReason(a.finish)
	switch finish {
	case "function_call":
		finish = FinishToolCalls
	case "", "eos", "end_turn":
		finish = FinishStop
	}
	for i, c := range a.calls {
		call := ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()}
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d", i)
		}
		if finish == FinishLength {
			call.Incomplete = true
		} else if strings.TrimSpace(call.Arguments) == "" {
			call.Arguments = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	if finish == FinishStop && len(msg.ToolCalls) > 0 {
		finish = FinishToolCalls // Ollama and others say "stop" after tool calls
	}
	return msg, finish, nil
}

// usageOf converts go-openai's usage.
func usageOf(u *openai.Usage) Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}
