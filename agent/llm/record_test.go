package llm_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/llm/recorder"
)

const secretKey = "sk-proj-TESTSECRET-0123456789abcdef"

// TestAPIKeyNeverInLogsRecordingsOrErrors runs calls that succeed, retry
// and fail (with a server that echoes the key, and a tool result that holds
// it) and greps every byte the client logged, recorded or returned.
func TestAPIKeyNeverInLogsRecordingsOrErrors(t *testing.T) {
	dir := t.TempDir()
	rec, err := recorder.Open(filepath.Join(dir, "recordings"), "task-1", recorder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, srv := start(t, []fakemodel.Turn{
		{Status: 429, Body: `{"error":{"message":"Rate limit for key ` + secretKey + `","type":"rate_limit"}}`},
		{Text: "The .env holds " + secretKey + ".", ToolCalls: []fakemodel.ToolCall{{ID: "c", Name: "read_file", Arguments: `{"path":".env"}`}}},
		{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + secretKey + `","code":"invalid_api_key"}}`},
	}, func(cfg *llm.Config) { cfg.APIKey = secretKey }, llm.WithLogger(logger), llm.WithRecorder(rec))

	req := userReq("what is in .env?")
	resp, err := c.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "c", Content: "OPENAI_API_KEY=" + secretKey})
	_, err2 := c.Complete(context.Background(), req, nil)
	if err2 == nil {
		t.Fatal("the 401 did not fail")
	}
	rec.Close()

	if got := srv.Requests()[0].APIKey; got != secretKey {
		t.Fatalf("server got key %q; the test must use the key for real", got)
	}
	check := func(what string, b []byte) {
		t.Helper()
		if bytes.Contains(b, []byte(secretKey)) || bytes.Contains(b, []byte("TESTSECRET")) {
			t.Errorf("API key found in %s:\n%s", what, b)
		}
	}
	check("the log", logBuf.Bytes())
	check("the error", []byte(err2.Error()))
	cfg := c.Config()
	check("Config formatting", []byte(fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg)))
	files := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			check(p, b)
			files++
		}
		return nil
	})
	if files == 0 || logBuf.Len() == 0 {
		t.Fatalf("nothing written (%d files, %d log bytes): the test proves nothing", files, logBuf.Len())
	}
	xs, err := recorder.ReadFile(rec.Path())
	if err != nil || len(xs) != 2 {
		t.Fatalf("recording: %d exchanges, %v; want 2", len(xs), err)
	}
	if !strings.Contains(string(xs[1].Request), "[redacted]") || xs[1].Error == "" || len(xs[0].Failures) != 1 {
		t.Errorf("recording lost its content: %+v", xs)
	}
}

// conversation plays a fixed three-call conversation: a tool call, a
// parallel pair, then an answer.
func conversation(t *testing.T, c *llm.Client) []*llm.Response {
	t.Helper()
	req := userReq("rename Foo to Bar")
	req.Tools = []llm.ToolDef{{Name: "grep", Description: "search"}, {Name: "edit_file", Description: "edit"}}
	var out []*llm.Response
	for i := 0; i < 3; i++ {
		resp, err := c.Complete(context.Background(), req, nil)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		out = append(out, resp)
		req.Messages = append(req.Messages, resp.Message)
		for _, tc := range resp.Message.ToolCalls {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "result of " + tc.Name})
		}
	}
	return out
}

// TestRecordThenReplayGivesTheSameResponses records a run (with a retry in
// it), turns the recording into a script, and plays the same conversation
// against that script.
func TestRecordThenReplayGivesTheSameResponses(t *testing.T) {
	dir := t.TempDir()
	rec, err := recorder.Open(dir, "run", recorder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := start(t, []fakemodel.Turn{
		{Reasoning: "grep first", Text: "Searching.", ToolCalls: []fakemodel.ToolCall{{ID: "g1", Name: "grep", Arguments: `{"pattern":"Foo"}`}}},
		{Status: 503},
		{ToolCallIndex: "zero", ToolCalls: []fakemodel.ToolCall{
			{ID: "e1", Name: "edit_file", Arguments: `{"path":"a.go","old":"Foo","new":"Bar"}`},
			{ID: "e2", Name: "edit_file", Arguments: `{"path":"b.go","old":"Foo","new":"Bar"}`}}},
		{Text: "Renamed Foo to Bar in a.go and b.go.", Usage: &llm.Usage{InputTokens: 900, OutputTokens: 12, CachedTokens: 768}},
	}, nil, llm.WithRecorder(rec))
	first := conversation(t, c)
	rec.Close()

	xs, err := recorder.ReadFile(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, failures := range []bool{false, true} {
		script := fakemodel.FromExchanges(xs, failures)
		b, err := script.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := fakemodel.ParseScript(b)
		if err != nil {
			t.Fatalf("replayed script does not parse: %v\n%s", err, b)
		}
		srv, err := fakemodel.Start(parsed)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake-model", Retry: fast})
		if err != nil {
			t.Fatal(err)
		}
		second := conversation(t, c2)
		srv.Close()
		for i := range first {
			a, b := first[i], second[i]
			if !reflect.DeepEqual(a.Message, b.Message) || a.FinishReason != b.FinishReason || a.Usage != b.Usage {
				t.Errorf("failures=%t call %d differs:\nrecorded %+v %s %+v\nreplayed %+v %s %+v", failures, i+1,
					a.Message, a.FinishReason, a.Usage, b.Message, b.FinishReason, b.Usage)
			}
		}
		if wantAttempts := map[bool]int{false: 1, true: 2}[failures]; second[1].Attempts != wantAttempts {
			t.Errorf("failures=%t: call 2 took %d attempts; want %d", failures, second[1].Attempts, wantAttempts)
		}
	}
}

func TestRecorderRotatesAndCapsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old-task.jsonl")
	if err := os.WriteFile(old, bytes.Repeat([]byte("x"), 3000), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	r, err := recorder.Open(dir, "task/2", recorder.Options{MaxFileBytes: 1000, MaxFiles: 3, MaxDirBytes: 2500})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if err := r.Record(llm.Exchange{Seq: i + 1, Message: &llm.Message{Role: llm.RoleAssistant, Content: strings.Repeat("y", 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	names, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var total int64
	for _, n := range names {
		st, _ := os.Stat(n)
		total += st.Size()
		if st.Size() > 1000 {
			t.Errorf("%s is %d bytes; cap 1000", n, st.Size())
		}
	}
	want := []string{"task_2.1.jsonl", "task_2.2.jsonl", "task_2.jsonl"}
	var got []string
	for _, n := range names {
		got = append(got, filepath.Base(n))
	}
	if !reflect.DeepEqual(got, want) || total > 3000 {
		t.Errorf("files %v (%d bytes); want %v within the caps (old recording pruned first)", got, total, want)
	}
	xs, err := recorder.ReadFile(r.Path())
	if err != nil || len(xs) == 0 || xs[len(xs)-1].Seq != 40 {
		t.Errorf("current file: %d exchanges, %v; want the latest ending at seq 40", len(xs), err)
	}
}
