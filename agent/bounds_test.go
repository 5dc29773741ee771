package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// TestCallsPastTheCapAreRefusedWithResults: of a response with more tool
// calls than MaxToolCalls, the first MaxToolCalls run and every other one
// gets a result telling the model to call it again, so the history stays
// valid and the model can act on it.
func TestCallsPastTheCapAreRefusedWithResults(t *testing.T) {
	for _, n := range []int{3, 4, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var ran atomic.Int32
			tl := &fakeTool{name: "read_file", ro: true, run: func(context.Context, json.RawMessage) (tools.Result, error) {
				ran.Add(1)
				return tools.Result{Text: "contents"}, nil
			}}
			cs := make([]llm.ToolCall, n)
			for i := range cs {
				cs[i] = call("read_file", fmt.Sprintf(`{"path":"f%d"}`, i))
			}
			m := &scriptModel{resps: []*llm.Response{calls("", cs...), answer("done")}}
			res, rec := runTask(t, Config{MaxToolCalls: 4, NoRecord: true}, m, staticTools(tl), TaskSpec{Kind: KindAsk, Prompt: "read them"})
			if res.Status != StateCompleted {
				t.Fatalf("status %s (%s); want completed", res.Status, res.Error)
			}
			want := min(n, 4)
			if int(ran.Load()) != want || res.Tools["read_file"].Calls != want {
				t.Errorf("%d calls ran (%d counted); want %d", ran.Load(), res.Tools["read_file"].Calls, want)
			}
			hist := m.requests()[1].Messages
			if msg := ValidHistory(hist); msg != "" {
				t.Fatalf("history not valid: %s", msg)
			}
			refused := 0
			for _, h := range hist {
				if h.Role == llm.RoleTool && strings.HasPrefix(h.Content, "not run: at most 4 tool calls per response") {
					refused++
					if !strings.Contains(h.Content, "call the rest in your next response") {
						t.Errorf("refusal %q does not say what to do", h.Content)
					}
				}
			}
			if refused != n-want {
				t.Errorf("%d refusals in the history; want %d", refused, n-want)
			}
			notes, started := 0, 0
			for _, e := range rec.all() {
				switch {
				case e.Kind == EventNote && strings.Contains(e.Text, "were refused"):
					notes++
				case e.Kind == EventToolStarted:
					started++
				}
			}
			if wantNotes := min(n-want, 1); notes != wantNotes || started != want {
				t.Errorf("%d refusal notes and %d tool events; want %d and %d", notes, started, wantNotes, want)
			}
		})
	}
}

// TestStoreKeepsABoundedTextPerTask: past MaxStoredBytes the store keeps
// each text cut with a marker, while the model still gets it whole.
func TestStoreKeepsABoundedTextPerTask(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	big := strings.Repeat("x", 10_000)
	var cs []llm.ToolCall
	for i := range 10 {
		cs = append(cs, call("read_file", fmt.Sprintf(`{"path":"f%d"}`, i)))
	}
	m := &scriptModel{resps: []*llm.Response{calls("", cs...), answer("done")}}
	res, _ := runStoredTask(t, st, Config{MaxStoredBytes: 30_000, NoRecord: true}, m,
		staticTools(textTool("read_file", true, big)), TaskSpec{Kind: KindAsk, Prompt: "read them"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	for _, h := range m.requests()[1].Messages {
		if h.Role == llm.RoleTool && h.Content != big {
			t.Fatalf("the model got a cut result (%d bytes); want it whole", len(h.Content))
		}
	}
	rec, err := st.LoadTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	whole, cut, total := 0, 0, 0
	for _, sm := range rec.Messages {
		total += len(sm.Content)
		if sm.Role != string(llm.RoleTool) {
			continue
		}
		switch {
		case sm.Content == big:
			whole++
		case strings.Contains(sm.Content, "not stored: the task's store budget of 30000 bytes is spent"):
			cut++
		default:
			t.Errorf("stored result of %d bytes is neither whole nor marked", len(sm.Content))
		}
	}
	if whole == 0 || cut == 0 || whole+cut != 10 {
		t.Errorf("store holds %d whole and %d cut results; want some of each, 10 in all", whole, cut)
	}
	if total > 30_000+10*(storedHead+200) {
		t.Errorf("store holds %d bytes of message text; want about the budget of 30000", total)
	}
	if msg := ValidHistory(journal.StoredHistory(rec)); msg != "" {
		t.Errorf("stored context is not a valid history: %s", msg)
	}
}

// TestToolResultsReachTheModelRedacted: the model never reads a secret of
// Config.Secrets or of a known shape in a tool result.
func TestToolResultsReachTheModelRedacted(t *testing.T) {
	token := "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	m := &scriptModel{resps: []*llm.Response{calls("", call("read_file", `{"path":".env"}`)), answer("done")}}
	res, rec := runTask(t, Config{NoRecord: true, Secrets: func() []string { return []string{"server-secret-123"} }}, m,
		staticTools(textTool("read_file", true, "DB_PASS=server-secret-123\nGH="+token+"\n")), TaskSpec{Kind: KindAsk, Prompt: "read .env"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	var got string
	for _, h := range m.requests()[1].Messages {
		if h.Role == llm.RoleTool {
			got = h.Content
		}
	}
	if got != "DB_PASS=[redacted]\nGH=[redacted]\n" {
		t.Errorf("the model read %q; want both secrets redacted", got)
	}
	for _, e := range rec.all() {
		if strings.Contains(e.Text, "server-secret-123") || strings.Contains(e.Text, token) {
			t.Errorf("event %+v holds a secret", e)
		}
	}
}

// TestRedactedTextIsNeverWrittenBack: once a result had a secret hidden,
// a call that would write "[redacted]" is not run (it would destroy the
// secret), while one without it runs.
func TestRedactedTextIsNeverWrittenBack(t *testing.T) {
	var writes []string
	write := &fakeTool{name: "write_file", run: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
		writes = append(writes, string(args))
		return tools.Result{Text: "written"}, nil
	}}
	m := &scriptModel{resps: []*llm.Response{
		calls("", call("read_file", `{"path":".env"}`)),
		calls("", call("write_file", `{"path":".env","content":"DB_PASS=[redacted]\nDEBUG=1\n"}`)),
		calls("", call("write_file", `{"path":"notes.txt","content":"debug is on"}`)),
		answer("done"),
	}}
	res, _ := runTask(t, Config{NoRecord: true, Validate: ValidateOff, Secrets: func() []string { return []string{"server-secret-123"} }}, m,
		staticTools(textTool("read_file", true, "DB_PASS=server-secret-123\n"), write), TaskSpec{Kind: KindEdit, Prompt: "turn debug on"})
	if res.Status != StateCompleted {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	if len(writes) != 1 || !strings.Contains(writes[0], "notes.txt") {
		t.Fatalf("writes %q; want only notes.txt", writes)
	}
	msgs := m.requests()[2].Messages
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Content, "not run: the arguments hold [redacted]") {
		t.Errorf("the refused write answered %q", last.Content)
	}
}
