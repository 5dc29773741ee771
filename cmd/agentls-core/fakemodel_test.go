package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/lsp/lsptest"
)

func TestFakeModelCommandServesScriptAndPrintsURLFirst(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ file, content string }{
		{"script.json", `{"turns":[{"text":"hello from the script","toolCalls":[{"id":"c","name":"grep","arguments":{"pattern":"x"}}]}]}`},
		{"scenario.txtar", "comment\n-- model.json --\n{\"text\":\"hello from the script\",\"toolCalls\":[{\"id\":\"c\",\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\":\\\"x\\\"}\"}]}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			outR, outW := io.Pipe()
			var stderr lsptest.SyncBuffer
			done := make(chan error, 1)
			go func() {
				done <- runFakeModel(ctx, stdio{out: outW, err: &stderr}, []string{"--script", path, "--addr", "127.0.0.1:0"})
				outW.Close()
			}()
			line, err := bufio.NewReader(outR).ReadString('\n')
			if err != nil {
				t.Fatalf("no URL line: %v (stderr %s)", err, stderr.String())
			}
			url := strings.TrimSpace(line)
			if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
				t.Fatalf("first line %q; want http://127.0.0.1:PORT/v1", url)
			}
			c, err := llm.New(llm.Config{BaseURL: url, APIKey: "sk-cmd-secret", Model: "m", Retry: llm.RetryPolicy{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "hello from the script" || len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != `{"pattern":"x"}` {
				t.Errorf("answer %+v", resp.Message)
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("fake-model returned %v after cancel", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("fake-model did not stop")
			}
			if log := stderr.String(); !strings.Contains(log, "request") || strings.Contains(log, "sk-cmd-secret") {
				t.Errorf("stderr log: %s", log)
			}
		})
	}
}

func TestFakeModelCommandUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if err := runFakeModel(context.Background(), stdio{out: &out, err: &errb}, nil); err == nil {
		t.Error("no --script accepted")
	}
	err := runFakeModel(context.Background(), stdio{out: &out, err: &errb}, []string{"--script", filepath.Join(t.TempDir(), "missing.json")})
	if err == nil || out.Len() != 0 {
		t.Errorf("missing script: err %v, stdout %q", err, out.String())
	}
}
