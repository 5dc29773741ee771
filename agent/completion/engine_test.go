package completion_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/completion"
	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/workspace"
)

// rig is an engine asking a scripted model over real HTTP through the
// real model client.
type rig struct {
	model  *fakemodel.Server
	client *llm.Client
	env    completion.Env
	root   string
}

func newRig(t *testing.T, turns ...fakemodel.Turn) *rig {
	t.Helper()
	m, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	c, err := llm.New(llm.Config{BaseURL: m.URL(), Model: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	return &rig{model: m, client: c, root: root, env: completion.Env{
		Model: c,
		Gate:  ctxgate.New(root, redact.New("sk-configured-secret-123456")),
	}}
}

func doc(root, name, text string) completion.Document {
	return completion.Document{Name: filepath.Join(root, name), LanguageID: "go", Version: 1, Text: text}
}

// at is the request at the marker | in text (removed).
func at(root, name, marked string, invoked bool) completion.Request {
	i := strings.Index(marked, "|")
	text := marked[:i] + marked[i+1:]
	return completion.Request{Doc: doc(root, name, text), Position: workspace.PositionOf(text, i), Invoked: invoked}
}

var fim = completion.Config{Model: "fim", Timeout: 10 * time.Second, MaxTokens: 64, Debounce: 0}

func TestShapeOfTheAnswer(t *testing.T) {
	tests := []struct {
		name, marked, model string
		chat                bool
		want                string
		multi               bool
	}{
		{"one line: the rest of the answer's lines dropped", "x := |\n", "compute()\nmore()\n", false, "compute()", false},
		{"the text after the cursor is not repeated", "f(|)\n", "a, b)", false, "a, b", false},
		{"a block after an opening brace", "func f() {\n\t|\n}\n", "return 1\n}", false, "return 1", true},
		{"a block on the line of the brace", "if ok {|\n}\n", "\n\tgo()\n}", false, "\n\tgo()", true},
		{"a call opened on the line stays on it", "fmt.Println(|\n", "x)\ny", false, "x)", false},
		{"a chat answer's fence removed", "x := |\n", "```go\ncompute()\n```", true, "compute()", false},
		{"a chat answer starting with a newline", "x := |\n", "\ncompute()\n", true, "compute()", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := fakemodel.Turn{Text: tt.model, Times: -1}
			r := newRig(t, turn)
			cfg := fim
			if tt.chat {
				cfg.Model = ""
			}
			a, err := completion.New().Complete(context.Background(), cfg, r.env, at(r.root, "a.go", tt.marked, true))
			if err != nil {
				t.Fatal(err)
			}
			if a.Text != tt.want {
				t.Errorf("text = %q; want %q", a.Text, tt.want)
			}
			reqs := r.model.Requests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d", len(reqs))
			}
			if !tt.chat {
				stop := reqs[0].Completion.Stop
				if multi := len(stop) > 0 && stop[0] != "\n"; multi != tt.multi {
					t.Errorf("stop %q: multi-line = %v; want %v", stop, multi, tt.multi)
				}
			}
		})
	}
}

func TestContextWithinBudgetAndGate(t *testing.T) {
	r := newRig(t, fakemodel.Turn{Text: "1", Times: -1})
	var b strings.Builder
	b.WriteString("package big\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n")
	for i := range 400 {
		b.WriteString("// filler line number ")
		b.WriteString(strings.Repeat("x", i%40))
		b.WriteString("\n")
	}
	b.WriteString("func use() {\n\tv := Helper(|)\n}\n")
	other := "package big\n\nfunc Helper(n int) string {\n\treturn \"\"\n}\n\nfunc Unrelated() {}\n"
	secretDoc := "package big\n\nfunc Helper(n int) string // from the secret file\n"
	r.env.Others = func() []completion.Document {
		return []completion.Document{doc(r.root, ".env", secretDoc), doc(r.root, "other.go", other),
			doc(r.root, "ignored.go", "func Helper(n int) string // excluded\n")}
	}
	r.env.Excluded = func(name string) bool { return filepath.Base(name) == "ignored.go" }
	cfg := fim
	cfg.Budget = 3000
	p, err := completion.BuildPrompt(cfg, r.env, at(r.root, "big.go", b.String(), true))
	if err != nil {
		t.Fatal(err)
	}
	if p.Bytes() > cfg.Budget {
		t.Errorf("prompt is %d bytes; want at most the budget %d", p.Bytes(), cfg.Budget)
	}
	for _, want := range []string{"Path: big.go", `"strings"`, "func Helper(n int) string"} {
		if !strings.Contains(p.Header, want) {
			t.Errorf("header lacks %q:\n%s", want, p.Header)
		}
	}
	for _, never := range []string{"secret file", "excluded", "Unrelated", r.root} {
		if strings.Contains(p.Header+p.Prefix+p.Suffix, never) {
			t.Errorf("the context holds %q:\n%s", never, p.Header)
		}
	}
	if !strings.HasSuffix(p.Prefix, "\tv := Helper(") || !strings.HasPrefix(p.Suffix, ")\n}") {
		t.Errorf("prefix ends %q, suffix starts %q", p.Prefix[max(0, len(p.Prefix)-20):], p.Suffix)
	}
}

func TestSecretsNeverSent(t *testing.T) {
	r := newRig(t, fakemodel.Turn{Text: "x", Times: -1})
	e := completion.New()
	for _, name := range []string{".env", "config/.env.local", ".npmrc", "credentials.json"} {
		a, err := e.Complete(context.Background(), fim, r.env, at(r.root, name, "TOKEN=|abc\n", true))
		if err != nil || a.Outcome != completion.Withheld {
			t.Errorf("%s: outcome %q, err %v; want withheld", name, a.Outcome, err)
		}
	}
	// A link to a secret file is secret by its target.
	if err := os.WriteFile(filepath.Join(r.root, ".env"), []byte("TOKEN=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(r.root, "settings.txt")); err != nil {
		t.Fatal(err)
	}
	if a, _ := e.Complete(context.Background(), fim, r.env, at(r.root, "settings.txt", "TOKEN=|abc\n", true)); a.Outcome != completion.Withheld {
		t.Errorf("a link to .env: outcome %q; want withheld", a.Outcome)
	}
	// A configured secret and a dotenv secret value in an ordinary file
	// are hidden before the text leaves.
	if _, err := e.Complete(context.Background(), fim, r.env, at(r.root, "main.go", "key := \"sk-configured-secret-123456\"\nAPI_TOKEN=plainvalue99\nx := |\n", true)); err != nil {
		t.Fatal(err)
	}
	if n := len(r.model.Requests()); n != 1 {
		t.Fatalf("model requests = %d; want 1 (only main.go)", n)
	}
	body := string(r.model.Requests()[0].Body)
	for _, s := range []string{"sk-configured-secret-123456", "plainvalue99"} {
		if strings.Contains(body, s) {
			t.Errorf("the secret %q reached the model", s)
		}
	}
}

func TestCacheDebounceSupersedeAndMove(t *testing.T) {
	t.Run("a re-request at the same place is answered from the cache", func(t *testing.T) {
		r := newRig(t, fakemodel.Turn{Text: "42", Times: -1})
		e := completion.New()
		req := at(r.root, "a.go", "x := |\n", false)
		for i := range 3 {
			a, err := e.Complete(context.Background(), fim, r.env, req)
			if err != nil || a.Text != "42" || a.Cached != (i > 0) {
				t.Fatalf("call %d: %+v %v", i, a, err)
			}
		}
		if n := len(r.model.Requests()); n != 1 {
			t.Errorf("model asked %d times; want once", n)
		}
	})
	t.Run("a newer request for the document supersedes the one waiting", func(t *testing.T) {
		r := newRig(t, fakemodel.Turn{Text: "slow", Gate: "g", Match: &fakemodel.Match{Prompt: "first"}, Times: -1},
			fakemodel.Turn{Text: "fast", Times: -1})
		e := completion.New()
		first := make(chan completion.Answer, 1)
		go func() {
			a, _ := e.Complete(context.Background(), fim, r.env, at(r.root, "a.go", "first := |\n", true))
			first <- a
		}()
		waitFor(t, func() bool { return len(r.model.Requests()) == 1 })
		a, err := e.Complete(context.Background(), fim, r.env, at(r.root, "a.go", "second := |\n", true))
		if err != nil || a.Text != "fast" {
			t.Fatalf("second: %+v %v", a, err)
		}
		if got := <-first; got.Outcome != completion.Superseded || got.Text != "" {
			t.Errorf("first: %+v; want superseded with no text", got)
		}
	})
	t.Run("cancelling returns at once while the model still works", func(t *testing.T) {
		r := newRig(t, fakemodel.Turn{Text: "late", Gate: "never", Times: -1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := completion.New().Complete(ctx, fim, r.env, at(r.root, "a.go", "x := |\n", true))
			done <- err
		}()
		waitFor(t, func() bool { return len(r.model.Requests()) == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v; want context.Canceled", err)
		}
	})
	t.Run("an automatic request waits for the pause; an invoked one does not", func(t *testing.T) {
		r := newRig(t, fakemodel.Turn{Text: "1", Times: -1})
		cfg := fim
		cfg.Debounce = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := completion.New().Complete(ctx, cfg, r.env, at(r.root, "a.go", "y := |\n", false))
			done <- err
		}()
		// The invoked request answers while the automatic one waits.
		a, err := completion.New().Complete(context.Background(), cfg, r.env, at(r.root, "b.go", "z := |\n", true))
		if err != nil || a.Text != "1" {
			t.Fatalf("invoked: %+v %v", a, err)
		}
		if n := len(r.model.Requests()); n != 1 {
			t.Errorf("model requests = %d; want only the invoked one (the automatic one waits for the pause)", n)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("automatic: err = %v; want cancelled in its pause", err)
		}
		if n := len(r.model.Requests()); n != 1 {
			t.Errorf("model requests = %d; a request cancelled in its pause must not reach the model", n)
		}
	})
	t.Run("an answer for a document that moved on is dropped", func(t *testing.T) {
		r := newRig(t, fakemodel.Turn{Text: "stale", Times: -1})
		r.env.Version = func(string) (int32, bool) { return 2, true }
		a, err := completion.New().Complete(context.Background(), fim, r.env, at(r.root, "a.go", "x := |\n", true))
		if err != nil || a.Text != "" || a.Outcome != completion.Moved {
			t.Errorf("%+v %v; want moved, no text", a, err)
		}
	})
}

// waitFor waits for cond, checking it each millisecond, at most 20 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 20 s")
		}
		time.Sleep(time.Millisecond)
	}
}
