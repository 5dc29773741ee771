package fakemodel_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	openai "github.com/sashabaranov/go-openai"
)

func TestParseScriptForms(t *testing.T) {
	tests := []struct {
		name, in string
		turns    int
		err      string
	}{
		{"object", `{"turns":[{"text":"a"},{"status":503,"times":3}]}`, 2, ""},
		{"array", `[{"text":"a"},{"toolCalls":[{"name":"grep","arguments":{"pattern":"x"}}]}]`, 2, ""},
		{"json lines", "{\"text\":\"a\"}\n{\"text\":\"b\",\"delay\":\"20ms\"}\n{\"garbage\":\"zz\",\"chunkDelay\":5}\n", 3, ""},
		{"misspelt field", `[{"txt":"a"}]`, 0, "unknown field"},
		{"bad index mode", `[{"toolCalls":[{"name":"x"}],"toolCallIndex":"one"}]`, 0, "toolCallIndex"},
		{"status not an error", `[{"status":200}]`, 0, "status 200"},
		{"empty", ``, 0, "empty script"},
		{"hold without a gate", `[{"text":"a","holdAfterChunks":2}]`, 0, "needs a gate"},
		{"gate held before a whole answer", `[{"text":"a","gate":"g"}]`, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := fakemodel.ParseScript([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseScript(%q) err = %v; want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || len(s.Turns) != tt.turns {
				t.Fatalf("ParseScript(%q) = %d turns, %v; want %d", tt.in, len(s.Turns), err, tt.turns)
			}
		})
	}
	s, _ := fakemodel.ParseScript([]byte(`[{"toolCalls":[{"name":"grep","arguments":{"pattern": "x"}}]},{"delay":"20ms"}]`))
	if got := string(s.Turns[0].ToolCalls[0].Arguments); got != `{"pattern":"x"}` {
		t.Errorf("object arguments = %q", got)
	}
	if time.Duration(s.Turns[1].Delay) != 20*time.Millisecond {
		t.Errorf("delay = %v", time.Duration(s.Turns[1].Delay))
	}
}

func client(srv *fakemodel.Server) *openai.Client {
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL()
	return openai.NewClientWithConfig(cfg)
}

func ask(c *openai.Client, msgs ...openai.ChatCompletionMessage) (openai.ChatCompletionResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: msgs})
}

// TestTxtarScenarioMatchesAndAnswersNonStreaming loads a script from a txtar
// section; the matching turn wins once the tool result holds its text.
func TestTxtarScenarioMatchesAndAnswersNonStreaming(t *testing.T) {
	data, err := os.ReadFile("testdata/scenario.txtar")
	if err != nil {
		t.Fatal(err)
	}
	s, err := fakemodel.ParseTxtar(data, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := client(srv)
	user := openai.ChatCompletionMessage{Role: "user", Content: "what does main.go do?"}
	r1, err := ask(c, user)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Choices) != 1 || len(r1.Choices[0].Message.ToolCalls) != 1 || r1.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"path":"main.go"}` || r1.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("first answer %+v; want the read_file call", r1)
	}
	r2, err := ask(c, user, r1.Choices[0].Message, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "r1", Content: "package main\n\nfunc main() {}"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.Choices[0].Message.Content; got != "It is an empty program." || r2.Usage.PromptTokens == 0 {
		t.Errorf("second answer %q usage %+v", got, r2.Usage)
	}
	// Out of turns: a 500 that names the request.
	_, err = ask(c, user)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 || !strings.Contains(apiErr.Message, "no turn left for request 3") {
		t.Errorf("third request err = %v; want a 500 naming request 3", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[1].Turn != 0 || reqs[0].Turn != 1 || reqs[2].Turn != -1 || reqs[0].APIKey != "k" || reqs[0].Header.Get("Authorization") != "[redacted]" {
		t.Errorf("recorded %d requests, turns %d %d, key %q, auth header %q", len(reqs), reqs[0].Turn, reqs[1].Turn, reqs[0].APIKey, reqs[0].Header.Get("Authorization"))
	}
	if reqs[1].Chat.Messages[2].Content != "package main\n\nfunc main() {}" {
		t.Errorf("decoded request lost the tool result: %+v", reqs[1].Chat.Messages)
	}
}

func TestMatchConditions(t *testing.T) {
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
		{Match: &fakemodel.Match{System: "reviewer"}, Text: "review", Times: -1},
		{Match: &fakemodel.Match{LastUser: "weather", Request: 2}, Text: "sunny"},
		{Text: "default", Times: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := client(srv)
	tests := []struct {
		msgs []openai.ChatCompletionMessage
		want string
	}{
		{[]openai.ChatCompletionMessage{{Role: "user", Content: "weather?"}}, "default"}, // request 1: the Request condition fails
		{[]openai.ChatCompletionMessage{{Role: "user", Content: "weather?"}}, "sunny"},
		{[]openai.ChatCompletionMessage{{Role: "system", Content: "You are a reviewer."}, {Role: "user", Content: "x"}}, "review"},
		{[]openai.ChatCompletionMessage{{Role: "user", Content: "weather?"}}, "default"}, // sunny is used up
	}
	for i, tt := range tests {
		r, err := ask(c, tt.msgs...)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Choices[0].Message.Content; got != tt.want {
			t.Errorf("request %d answered %q; want %q", i+1, got, tt.want)
		}
	}
}

// TestGateHoldsTheStream: a turn with a gate sends its first chunks, holds
// the rest until the gate is opened over HTTP, then ends the stream.
func TestGateHoldsTheStream(t *testing.T) {
	srv, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "first part. then the rest", ChunkSize: 6, Gate: "g1", HoldAfterChunks: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := client(srv).CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Model: "m", Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := ""
	for got != "first part. " { // the role chunk, then two text chunks of 6
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("Recv after %q: %v", got, err)
		}
		if len(r.Choices) > 0 {
			got += r.Choices[0].Delta.Content
		}
	}
	held := make(chan string, 1)
	go func() {
		rest := ""
		for {
			r, err := st.Recv()
			if err != nil {
				held <- rest
				return
			}
			if len(r.Choices) > 0 {
				rest += r.Choices[0].Delta.Content
			}
		}
	}()
	select {
	case rest := <-held:
		t.Fatalf("the stream went on before the gate opened: %q", rest)
	case <-time.After(300 * time.Millisecond): // nothing may come: a bounded look
	}
	resp, err := http.Post(strings.TrimSuffix(srv.URL(), "/v1")+"/v1/gates/g1", "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST gates/g1 = %v, %v; want 204", resp, err)
	}
	resp.Body.Close()
	if rest := <-held; rest != "then the rest" {
		t.Errorf("after the gate opened: %q; want %q", rest, "then the rest")
	}
}
