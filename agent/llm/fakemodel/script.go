// Package fakemodel is a scripted OpenAI-compatible chat-completion server
// for tests: each request is answered by a turn of a script (text, tool
// calls streamed in realistic deltas, reasoning, a cut answer, HTTP errors,
// delays, broken streams, garbage), and every request is recorded so tests
// can assert on what was sent. The script format is documented in
// docs/models.md.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"golang.org/x/tools/txtar"
)

// Script is a list of turns. A request is answered by the first unused turn
// whose Match matches it; failing that, by the next unused turn without a
// Match, in order.
type Script struct {
	Turns []Turn `json:"turns"`
}

// Turn is one scripted answer.
type Turn struct {
	// Name labels the turn in logs.
	Name string `json:"name,omitempty"`
	// Match, when set, makes the turn answer only requests it matches, in
	// preference to the turns in order.
	Match *Match `json:"match,omitempty"`
	// Times is how many requests the turn answers: default 1, -1 for all.
	Times int `json:"times,omitempty"`

	// The answer.
	Text      string     `json:"text,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ReasoningField is the delta field reasoning is sent in:
	// "reasoning_content" (DeepSeek, the default) or "reasoning" (OpenRouter,
	// Ollama, vLLM).
	ReasoningField string `json:"reasoningField,omitempty"`
	// ToolCallIndex is how streamed tool calls are indexed: "sequential"
	// (default: 0, 1, ...), "zero" (every call at index 0, as Ollama does) or
	// "none" (no index field).
	ToolCallIndex string `json:"toolCallIndex,omitempty"`
	// FinishReason defaults to "tool_calls" when there are tool calls, else
	// "stop". "length" makes a cut answer.
	FinishReason string `json:"finishReason,omitempty"`
	// Usage is reported in the last chunk (or the response); when nil, the
	// server counts about 4 bytes a token and reports as cached the prefix
	// shared with the previous request.
	Usage *llm.Usage `json:"usage,omitempty"`
	// ChunkSize is the longest delta in runes (text, reasoning) or bytes
	// (arguments); default 4.
	ChunkSize int `json:"chunkSize,omitempty"`

	// Failures and timing.
	Status    int               `json:"status,omitempty"`    // an HTTP error status (>= 400)
	Body      string            `json:"body,omitempty"`      // its body; default an OpenAI-style error
	ErrorCode string            `json:"errorCode,omitempty"` // code in the default error body
	Headers   map[string]string `json:"headers,omitempty"`   // e.g. {"Retry-After": "1"}
	// Delay is waited before the response headers; ChunkDelay between chunks.
	Delay      Duration `json:"delay,omitempty"`
	ChunkDelay Duration `json:"chunkDelay,omitempty"`
	// BreakAfterChunks cuts the connection after that many chunks;
	// BreakInArguments cuts it after half of the argument deltas.
	BreakAfterChunks int  `json:"breakAfterChunks,omitempty"`
	BreakInArguments bool `json:"breakInArguments,omitempty"`
	// Gate holds the stream after HoldAfterChunks chunks (the role chunk
	// counts as the first; an answer sent whole, to a completions request
	// or a chat request without stream, is held before it is sent) until the gate of that name is opened: a POST to
	// BASE/gates/NAME (Server.OpenGate), or the request ends. A test
	// opens it once it has seen what the first chunks produce (an editor
	// showing the first part of a streamed answer), so the rest is held
	// for exactly as long as the test needs, without a fixed delay. An
	// opened gate stays open.
	Gate            string `json:"gate,omitempty"`
	HoldAfterChunks int    `json:"holdAfterChunks,omitempty"`
	// StreamError ends the stream with an error event carrying this message.
	StreamError string `json:"streamError,omitempty"`
	// Garbage is sent verbatim as a 200 response body instead of an answer.
	Garbage string `json:"garbage,omitempty"`
}

// ToolCall is a scripted tool call. Arguments may be written as a JSON
// string holding the arguments' text or as the JSON object itself.
type ToolCall struct {
	ID        string `json:"id,omitempty"` // default call_<request>_<n>
	Name      string `json:"name"`
	Arguments Args   `json:"arguments,omitempty"`
}

// Args is tool-call arguments text.
type Args string

// UnmarshalJSON accepts a string or any other JSON value (kept as text).
func (a *Args) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = Args(s)
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	*a = Args(buf.String())
	return nil
}

// MarshalJSON writes the arguments as a string.
func (a Args) MarshalJSON() ([]byte, error) { return json.Marshal(string(a)) }

// Match selects the requests a turn answers. Every field set must hold.
type Match struct {
	LastUser       string `json:"lastUser,omitempty"`       // the last user message contains it
	LastToolResult string `json:"lastToolResult,omitempty"` // the last tool message contains it
	LastMessage    string `json:"lastMessage,omitempty"`    // the last message contains it
	AnyMessage     string `json:"anyMessage,omitempty"`     // some message contains it
	System         string `json:"system,omitempty"`         // a system message contains it
	Request        int    `json:"request,omitempty"`        // the 1-based request number
	// Prompt and Suffix match a completions request (fill in the middle)
	// whose prompt, and suffix, contain them; a turn with either set
	// answers no chat request.
	Prompt string `json:"prompt,omitempty"`
	Suffix string `json:"suffix,omitempty"`
}

// Duration is a time.Duration written as "150ms" or as milliseconds.
type Duration time.Duration

// UnmarshalJSON accepts "1.5s" or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("duration: want \"150ms\" or milliseconds, got %s", b)
	}
	*d = Duration(f * float64(time.Millisecond))
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ParseScript reads a script: a JSON object {"turns": [...]}, a JSON array
// of turns, or JSON lines with one turn per line. Unknown fields are errors,
// so a misspelt option does not pass silently.
func ParseScript(data []byte) (Script, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return Script{}, errors.New("empty script")
	}
	var s Script
	if data[0] == '[' {
		if err := strictDecode(data, &s.Turns); err != nil {
			return Script{}, fmt.Errorf("script: %w", err)
		}
		return s, s.check()
	}
	var probe map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&probe); err == nil && !dec.More() {
		if _, ok := probe["turns"]; ok {
			if err := strictDecode(data, &s); err != nil {
				return Script{}, fmt.Errorf("script: %w", err)
			}
			return s, s.check()
		}
	}
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	for n := 1; dec.More(); n++ {
		var t Turn
		if err := dec.Decode(&t); err != nil {
			return Script{}, fmt.Errorf("script turn %d: %w", n, err)
		}
		s.Turns = append(s.Turns, t)
	}
	return s, s.check()
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// LoadScript reads a script file; a .txtar file must hold a section named
// section (default "model.json").
func LoadScript(path, section string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, err
	}
	if strings.HasSuffix(path, ".txtar") {
		return ParseTxtar(data, section)
	}
	return ParseScript(data)
}

// ParseTxtar reads the script in section name (default "model.json") of a
// txtar archive, as agent scenario tests embed it.
func ParseTxtar(archive []byte, name string) (Script, error) {
	if name == "" {
		name = "model.json"
	}
	ar := txtar.Parse(archive)
	for _, f := range ar.Files {
		if f.Name == name {
			s, err := ParseScript(f.Data)
			if err != nil {
				return Script{}, fmt.Errorf("txtar section %s: %w", name, err)
			}
			return s, nil
		}
	}
	return Script{}, fmt.Errorf("txtar archive has no section %q", name)
}

// check rejects scripts that cannot mean anything.
func (s Script) check() error {
	for i, t := range s.Turns {
		switch t.ToolCallIndex {
		case "", "sequential", "zero", "none":
		default:
			return fmt.Errorf("turn %d: toolCallIndex %q: want sequential, zero or none", i+1, t.ToolCallIndex)
		}
		switch t.ReasoningField {
		case "", "reasoning_content", "reasoning":
		default:
			return fmt.Errorf("turn %d: reasoningField %q: want reasoning_content or reasoning", i+1, t.ReasoningField)
		}
		if t.Status != 0 && (t.Status < 400 || t.Status > 599) {
			return fmt.Errorf("turn %d: status %d: want an error status 400-599", i+1, t.Status)
		}
		if t.HoldAfterChunks > 0 && t.Gate == "" {
			return fmt.Errorf("turn %d: holdAfterChunks needs a gate", i+1)
		}
		if t.BreakInArguments && len(t.ToolCalls) == 0 {
			return fmt.Errorf("turn %d: breakInArguments needs toolCalls", i+1)
		}
	}
	return nil
}
