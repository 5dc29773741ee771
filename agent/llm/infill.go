package llm

import (
	"context"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// maxInfillBytes bounds the answer of one Infill call.
const maxInfillBytes = 1 << 20

// InfillRequest is one fill-in-the-middle call: the text to insert
// between Prompt and Suffix. With Messages empty it goes to the legacy
// completions endpoint ({baseURL}/completions with prompt and suffix,
// which Ollama, llama.cpp's server, vLLM, DeepSeek and Codestral serve);
// with Messages set it is a chat-completion call whose answer is the
// text.
type InfillRequest struct {
	// Model replaces the client's model name for this call ("" keeps it).
	Model    string
	Prompt   string
	Suffix   string
	Messages []Message
	// Stop sequences end the answer (not included in it).
	Stop []string
	// MaxTokens bounds the answer; 0 leaves it to the service.
	MaxTokens int
}

// InfillResult is the answer of one Infill call.
type InfillResult struct {
	Text     string
	Sent     int           // bytes of the request body sent
	Duration time.Duration // from the call to its answer
}

// Infill makes one fill-in-the-middle call: a single attempt without
// retries (an editor asks again as the user types), bounded by ctx, not
// streamed and not recorded. Failures are redacted like Complete's.
func (c *Client) Infill(ctx context.Context, req InfillRequest) (*InfillResult, error) {
	start := time.Now()
	info := &attemptInfo{maxBody: maxInfillBytes}
	actx := context.WithValue(ctx, attemptKey{}, info)
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	var text string
	var err error
	if len(req.Messages) == 0 {
		var resp openai.CompletionResponse
		resp, err = c.api.CreateCompletion(actx, openai.CompletionRequest{
			Model: model, Prompt: req.Prompt, Suffix: req.Suffix, Stop: req.Stop, MaxTokens: req.MaxTokens,
		})
		if err == nil && len(resp.Choices) > 0 {
			text = resp.Choices[0].Text
		}
	} else {
		oreq := openai.ChatCompletionRequest{Model: model, Stop: req.Stop, MaxCompletionTokens: req.MaxTokens}
		for _, m := range req.Messages {
			oreq.Messages = append(oreq.Messages, openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content})
		}
		var resp openai.ChatCompletionResponse
		resp, err = c.api.CreateChatCompletion(actx, oreq)
		if err == nil && len(resp.Choices) > 0 {
			text = resp.Choices[0].Message.Content
		}
	}
	res := &InfillResult{Text: text, Sent: len(info.body), Duration: time.Since(start)}
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("infill cancelled: %w", ctx.Err())
		}
		f := c.classify(err)
		f.err = redactErr(f.err, c.cfg.secrets()...)
		kind := f.kind
		if kind == "" && f.transient {
			kind = KindTransient
		}
		return res, &Error{Kind: kind, Status: f.status, Code: f.code, Attempts: 1, Hint: f.hint, Err: f.err}
	}
	c.log.Debug("infill", "model", model, "sentBytes", res.Sent, "durationMs", ms(res.Duration), "chars", len(text))
	return res, nil
}
