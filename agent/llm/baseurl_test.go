package llm_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
)

// queryKey is a key a gateway takes in the base URL's query.
const queryKey = "qk-0123456789abcdef"

// TestBaseURLQueryStaysAQuery: the path of the endpoint is joined before
// the base URL's query, which every request carries.
func TestBaseURLQueryStaysAQuery(t *testing.T) {
	for _, tc := range []struct{ suffix, wantQuery string }{
		{"?key=" + queryKey, "key=" + queryKey},
		{"/?key=" + queryKey + "&team=a", "key=" + queryKey + "&team=a"},
	} {
		c, srv := start(t, []fakemodel.Turn{{Text: "ok"}}, func(cfg *llm.Config) { cfg.BaseURL += tc.suffix })
		if _, err := c.Complete(context.Background(), userReq("hi"), nil); err != nil {
			t.Fatalf("base %s: %v", tc.suffix, err)
		}
		r := srv.Requests()[0]
		if r.Path != "/v1/chat/completions" || r.RawQuery != tc.wantQuery {
			t.Errorf("base %s: request to %s?%s; want /v1/chat/completions?%s", tc.suffix, r.Path, r.RawQuery, tc.wantQuery)
		}
	}
}

// TestBaseURLSecretsNeverInErrorsOrLogs: a failed call's error and the
// client's log name the base URL without its query values or user
// information.
func TestBaseURLSecretsNeverInErrorsOrLogs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: the connection is refused
	var logs bytes.Buffer
	cfg := llm.Config{BaseURL: "http://user:pw-0123456789@" + addr + "/v1?key=" + queryKey, APIKey: "sk-test", Model: "m",
		Retry: llm.RetryPolicy{MaxAttempts: 1}}
	c, err := llm.New(cfg, llm.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), userReq("hi"), nil)
	if err == nil {
		t.Fatal("Complete succeeded with nothing listening")
	}
	for what, text := range map[string]string{"error": err.Error(), "log": logs.String(), "config": cfg.String()} {
		for _, secret := range []string{queryKey, "pw-0123456789"} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s holds %q: %s", what, secret, text)
			}
		}
	}
}
