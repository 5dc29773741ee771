package agent

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// TokenCounter counts the tokens of a text.
type TokenCounter interface {
	Count(text string) int
}

// tiktokenCounter counts with a real BPE tokenizer (o200k_base, the encoding
// of current OpenAI models; a close estimate for others).
type tiktokenCounter struct {
	once  sync.Once
	codec tokenizer.Codec

	mu   sync.Mutex     // guards memo
	memo map[string]int // counts of recent long texts: a history is recounted every turn
}

// memoMin is the shortest text worth remembering; memoMax bounds the memo.
const (
	memoMin = 8
	memoMax = 4096
)

func (c *tiktokenCounter) Count(text string) int {
	if len(text) < memoMin {
		return c.count(text)
	}
	c.mu.Lock()
	n, ok := c.memo[text]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.count(text)
	c.mu.Lock()
	if c.memo == nil || len(c.memo) >= memoMax {
		c.memo = make(map[string]int)
	}
	c.memo[text] = n
	c.mu.Unlock()
	return n
}

func (c *tiktokenCounter) count(text string) int {
	if text == "" {
		return 0
	}
	c.once.Do(func() {
		codec, err := tokenizer.Get(tokenizer.O200kBase)
		if err == nil {
			c.codec = codec
		}
	})
	if c.codec == nil {
		return (len(text) + 3) / 4
	}
	n, err := c.codec.Count(text)
	if err != nil {
		return (len(text) + 3) / 4
	}
	return n
}

var defaultCounter = &tiktokenCounter{}

// DefaultTokenCounter returns the shared tiktoken (o200k_base) counter.
func DefaultTokenCounter() TokenCounter { return defaultCounter }

// perMessage is the token overhead of one message in the chat format.
const perMessage = 4

// CountRequest estimates the input tokens of a request.
func CountRequest(c TokenCounter, msgs []llm.Message, defs []llm.ToolDef) int {
	n := 3
	for _, m := range msgs {
		n += countMessage(c, m)
	}
	for _, d := range defs {
		n += c.Count(d.Name) + c.Count(d.Description) + c.Count(string(d.Parameters)) + perMessage
	}
	return n
}

func countMessage(c TokenCounter, m llm.Message) int {
	n := perMessage + c.Count(m.Content)
	for _, tc := range m.ToolCalls {
		n += c.Count(tc.Name) + c.Count(tc.Arguments) + perMessage
	}
	return n
}

// ContextWindow returns the context window (tokens) of a model name, or
// fallback when the model is unknown.
func ContextWindow(model string, fallback int) int {
	m := strings.ToLower(model)
	for _, w := range []struct {
		prefix string
		tokens int
	}{
		{"gpt-4.1", 1_000_000}, {"gpt-5", 400_000}, {"gpt-4o", 128_000}, {"o1", 200_000},
		{"o3", 200_000}, {"o4", 200_000}, {"gpt-4-turbo", 128_000}, {"gpt-4", 8_192},
		{"gpt-3.5", 16_385}, {"qwen", 32_768}, {"llama3", 8_192}, {"llama-3", 128_000},
		{"deepseek", 64_000}, {"claude", 200_000}, {"gemini", 1_000_000}, {"mistral", 32_768},
	} {
		if strings.HasPrefix(m, w.prefix) {
			return w.tokens
		}
	}
	return fallback
}

// summaryMarker starts the message that replaces compacted turns.
const summaryMarker = "[Summary of earlier work in this task; older turns were compacted]"

// Compact replaces older turns of msgs by one summary message so that the
// request fits in target tokens. msgs[:head] (the system prompt and
// the task) are always kept; an earlier summary right after them is folded
// into the new one; the cut is always made before an assistant or user
// message, so a tool call and its results stay together; the last turn is
// always kept; the current plan is written into the summary. It returns msgs
// unchanged (and false) when nothing can or need be dropped.
func Compact(c TokenCounter, msgs []llm.Message, defs []llm.ToolDef, head int, plan tools.Plan, target int) ([]llm.Message, bool) {
	if len(msgs) <= head || CountRequest(c, msgs, defs) <= target {
		return msgs, false
	}
	start := head
	var prevSummary string
	if start < len(msgs) && msgs[start].Role == llm.RoleUser && strings.HasPrefix(msgs[start].Content, summaryMarker) {
		prevSummary = strings.TrimSpace(strings.TrimPrefix(msgs[start].Content, summaryMarker))
		start++
	}
	// Candidate cuts: indices of non-tool messages after start. The last one
	// is the start of the last turn, which is always kept.
	var cuts []int
	for i := start + 1; i < len(msgs); i++ {
		if msgs[i].Role != llm.RoleTool {
			cuts = append(cuts, i)
		}
	}
	if len(cuts) == 0 {
		return msgs, false
	}
	fixed := CountRequest(c, msgs[:head], defs) + 200 // head, tool defs and a summary's overhead
	cut := cuts[len(cuts)-1]
	for _, i := range cuts {
		if fixed+CountRequest(c, msgs[i:], nil) <= target {
			cut = i
			break
		}
	}
	summary := summarize(prevSummary, msgs[start:cut], plan)
	out := make([]llm.Message, 0, head+1+len(msgs)-cut)
	out = append(out, msgs[:head]...)
	out = append(out, llm.Message{Role: llm.RoleUser, Content: summaryMarker + "\n" + summary})
	out = append(out, msgs[cut:]...)
	return out, true
}

// summarize writes an extractive summary of dropped turns: what was asked,
// which tools ran with what outcome, what the model said, and the plan.
func summarize(prev string, dropped []llm.Message, plan tools.Plan) string {
	var b strings.Builder
	if prev != "" {
		// Keep the earlier summary without its old plan section.
		if i := strings.Index(prev, "\nCurrent plan:"); i >= 0 {
			prev = prev[:i]
		}
		b.WriteString(strings.TrimSpace(prev))
		b.WriteString("\n")
	}
	for _, m := range dropped {
		switch m.Role {
		case llm.RoleAssistant:
			if t := firstLine(m.Content, 160); t != "" {
				fmt.Fprintf(&b, "- you said: %s\n", t)
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "- you called %s %s\n", tc.Name, clip(oneLine(tc.Arguments), 120))
			}
		case llm.RoleTool:
			fmt.Fprintf(&b, "  -> %s: %s\n", m.Name, firstLine(m.Content, 160))
		case llm.RoleUser:
			fmt.Fprintf(&b, "- note: %s\n", firstLine(m.Content, 160))
		}
	}
	if len(plan.Items) > 0 {
		b.WriteString("\nCurrent plan:\n")
		b.WriteString(renderPlan(plan))
	}
	return strings.TrimSpace(b.String())
}

func renderPlan(p tools.Plan) string {
	var b strings.Builder
	for _, it := range p.Items {
		fmt.Fprintf(&b, "%s %s: %s", it.Status.Mark(), it.ID, it.Text)
		if it.Reason != "" {
			fmt.Fprintf(&b, " (%s)", it.Reason)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s, max)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + "…"
}
