package lsp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// streamedAnswer is an answer of six paragraphs, the second holding the
// API key. hold is the number of chunks (of chunkSize runes, after the role
// chunk) that carry the first three paragraphs: a turn with
// holdAfterChunks: hold sends them and waits at its gate.
func streamedAnswer(chunkSize int) (text string, hold int) {
	var paras []string
	for i := 1; i <= 6; i++ {
		p := fmt.Sprintf("Paragraph %d: Greet builds the greeting and main prints it; this sentence only makes the paragraph long enough to take many chunks.", i)
		if i == 2 {
			p += " The key is " + testAPIKey + "."
		}
		paras = append(paras, p)
	}
	prefix := strings.Join(paras[:3], "\n\n") + "\n\n"
	return strings.Join(paras, "\n\n"), 1 + (len(prefix)+chunkSize-1)/chunkSize
}

// TestAnswerStreamsBeforeTheReply: a client that declares
// experimental.agentls.answerStream receives the answer in agentls/answer
// notifications while the model still writes it: the first paragraphs
// while the model holds the rest at a gate, more than one with text before
// the command's reply, gathered (fewer notifications than model chunks),
// redacted (the API key in the answer never reaches the stream), ending
// with done, and together equal to the final answer of the reply.
func TestAnswerStreamsBeforeTheReply(t *testing.T) {
	const chunkSize = 8
	answer, hold := streamedAnswer(chunkSize)
	a := newAgentSession(t, []fakemodel.Turn{{
		Text: answer, ChunkSize: chunkSize, ChunkDelay: fakemodel.Duration(10 * time.Millisecond),
		Gate: "rest", HoldAfterChunks: hold, FinishReason: "stop",
	}}, goFiles, lsptest.Config{WorkDoneProgress: true, AnswerStream: true}, agentOpts{})

	type result struct {
		r    lsp.RunReply
		err  error
		seen lsptest.State // what the client had received when the reply came
	}
	done := make(chan result, 1)
	go func() {
		r, err := a.c.Run(t, ctx(t), map[string]any{"prompt": "explain the layout", "mode": "ask"})
		done <- result{r, err, a.c.Snapshot()}
	}()
	withText := func(s *lsptest.State) int {
		n := 0
		for _, p := range s.Answers {
			if p.Text != "" {
				n++
			}
		}
		return n
	}
	st := a.c.Await(20*time.Second, "an agentls/answer notification with text", func(s *lsptest.State) bool { return withText(s) >= 1 })
	select {
	case res := <-done:
		t.Fatalf("the reply came while the model held the rest of the answer: %+v, %v", res.r, res.err)
	default:
	}
	for _, p := range st.Answers {
		if p.Done {
			t.Fatalf("done came before the model finished: %+v", st.Answers)
		}
	}
	if got := st.AnswerText(st.Answers[0].TaskID); !strings.Contains(got, "Paragraph 1:") || strings.Contains(got, "Paragraph 4:") {
		t.Errorf("streamed while the model holds paragraph 4 on: %q; want the first paragraphs", got)
	}
	a.model.OpenGate("rest")
	res := <-done
	if res.err != nil || res.r.Status != "completed" {
		t.Fatalf("reply = %+v, %v", res.r, res.err)
	}
	// Everything, done included, came before the reply (the client's read
	// loop handles the messages in the order the server sent them).
	st = res.seen
	if n := withText(&st); n < 2 {
		t.Errorf("%d agentls/answer notifications with text before the reply; want more than one: %+v", n, st.Answers)
	}
	var doneAt time.Time
	for _, p := range st.Answers {
		if p.TaskID != res.r.TaskID {
			t.Errorf("agentls/answer for task %q; want %q", p.TaskID, res.r.TaskID)
		}
		if strings.Contains(p.Text, testAPIKey) {
			t.Errorf("the API key is in a streamed part: %q", p.Text)
		}
		if p.Done {
			doneAt = p.Time
		}
	}
	streamed := st.AnswerText(res.r.TaskID)
	if strings.TrimSpace(streamed) != strings.TrimSpace(res.r.Answer) {
		t.Errorf("the streamed parts make\n%q\nthe reply's answer is\n%q", streamed, res.r.Answer)
	}
	if !strings.Contains(streamed, "The key is [redacted].") {
		t.Errorf("streamed answer = %q; want the key redacted", streamed)
	}
	chunks := len([]rune(answer)) / chunkSize
	if len(st.Answers) >= chunks/4 {
		t.Errorf("%d notifications for %d model chunks; want them gathered", len(st.Answers), chunks)
	}
	if doneAt.IsZero() || !st.Answers[len(st.Answers)-1].Done {
		t.Errorf("no done notification last before the reply: %+v", st.Answers)
	}
	a.checkNoKey(t)
}

// TestAnswerNotStreamedToPlainClients: a client that does not declare the
// capability gets no agentls/answer; the reply carries the answer as
// before.
func TestAnswerNotStreamedToPlainClients(t *testing.T) {
	answer, _ := streamedAnswer(8)
	a := newAgentSession(t, []fakemodel.Turn{{Text: answer, ChunkSize: 8, FinishReason: "stop"}},
		goFiles, lsptest.Config{WorkDoneProgress: true}, agentOpts{})
	r, err := a.run(t, map[string]any{"prompt": "explain the layout", "mode": "ask"})
	if err != nil || r.Status != "completed" || !strings.Contains(r.Answer, "Paragraph 6:") {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	if got := a.c.Snapshot().Answers; len(got) != 0 {
		t.Errorf("a plain client got %d agentls/answer notifications: %+v", len(got), got)
	}
}
