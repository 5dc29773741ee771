// Package llm is agentls's client for OpenAI-compatible chat-completion
// services, built on github.com/sashabaranov/go-openai. It streams, assembles
// tool calls from deltas, retries transient failures and records usage.
// It knows nothing of editors, tools or tasks.
package llm

import (
	"encoding/json"
	"time"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // raw JSON text as the model wrote it
	// Incomplete is set on calls of a response that was cut (finish_reason
	// "length") or whose stream broke: such a call must never be executed.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Message is one entry of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// Reasoning is the model's reasoning text (reasoning_content / reasoning).
	// It is kept for reports and never sent back to the provider.
	Reasoning  string     `json:"reasoning,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"` // for RoleTool
	Name       string     `json:"name,omitempty"`         // tool name, for RoleTool
	// Images are pictures the user attached (RoleUser only): sent as the
	// message's image parts, after its text.
	Images []Image `json:"images,omitempty"`
}

// Image is one picture of a user message: base64 data and its media type.
type Image struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"` // base64, standard encoding
}

// DataURL is the image as a data: URL, the form OpenAI's image_url part takes.
func (i Image) DataURL() string { return "data:" + i.MIMEType + ";base64," + i.Data }

// HasImages reports whether a message of req carries an image.
func (r Request) HasImages() bool {
	for _, m := range r.Messages {
		if len(m.Images) > 0 {
			return true
		}
	}
	return false
}

// ToolDef describes a tool to the model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON schema of the arguments
}

// Request is one chat-completion call. Model name and per-model options come
// from the client's configuration, so a request's prefix stays stable.
type Request struct {
	Messages []Message
	Tools    []ToolDef
}

// FinishReason says why the model stopped.
type FinishReason string

const (
	FinishStop      FinishReason = "stop"
	FinishToolCalls FinishReason = "tool_calls"
	FinishLength    FinishReason = "length"
	FinishFilter    FinishReason = "content_filter"
)

// Usage counts tokens of one call (or, summed, of a task).
type Usage struct {
	InputTokens     int `json:"inputTokens"`
	OutputTokens    int `json:"outputTokens"`
	CachedTokens    int `json:"cachedTokens"`
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:     u.InputTokens + v.InputTokens,
		OutputTokens:    u.OutputTokens + v.OutputTokens,
		CachedTokens:    u.CachedTokens + v.CachedTokens,
		ReasoningTokens: u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Response is the assembled answer of one call.
type Response struct {
	Message      Message
	FinishReason FinishReason
	Usage        Usage
	Duration     time.Duration // whole call, retries included
	FirstToken   time.Duration // time to the first streamed token of the final attempt
	Attempts     int           // 1 when no retry was needed
}

// Truncated reports a response cut at the token limit: its tool calls
// are incomplete and must not be executed.
func (r *Response) Truncated() bool { return r.FinishReason == FinishLength }

// EventKind names what an Event reports.
type EventKind string

const (
	EventText      EventKind = "text"      // a delta of answer text
	EventReasoning EventKind = "reasoning" // a delta of reasoning text
	EventRetry     EventKind = "retry"     // a transient failure; the call is retried after Wait
)

// Event is reported while a call runs, so the editor can show live progress.
type Event struct {
	Kind    EventKind
	Text    string        // EventText, EventReasoning
	Attempt int           // EventRetry: the attempt that failed (1-based)
	Wait    time.Duration // EventRetry: delay before the next attempt
	Status  int           // EventRetry: HTTP status, 0 for transport errors
	Err     string        // EventRetry: what failed, for people
}
