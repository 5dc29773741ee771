package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
)

// TestPromptOverTheLimitIsRefusedWithTheLimitNamed: a 10 MB prompt is
// refused before any work starts, with an error that names the limit.
func TestPromptOverTheLimitIsRefusedWithTheLimitNamed(t *testing.T) {
	h := session.New(session.Defaults(), session.Options{})
	defer h.Close()
	h.SetRoots([]string{t.TempDir()})
	_, err := h.Start(context.Background(), agent.TaskSpec{Kind: agent.KindAsk, Prompt: strings.Repeat("x", 10<<20)}, nil)
	var tooLarge *session.PromptTooLargeError
	if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "up to 256 KiB") {
		t.Fatalf("Start = %v; want the prompt refused naming the 256 KiB limit", err)
	}
	if n := len(h.Tasks()); n != 0 {
		t.Errorf("%d tasks registered; want none", n)
	}
}
