package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/rawrpc"
)

// Inline completion through the built binary, driven by a plain LSP
// client written by hand (rawrpc's Content-Length framing over the
// process's stdin and stdout, nothing of the project's LSP test client),
// against a scripted model over real HTTP.

// rawLSP is a minimal LSP client over a process's pipes: it answers the
// server's requests with null and keeps them.
type rawLSP struct {
	*rawrpc.Conn
	t *testing.T
}

func startRawLSP(t *testing.T, bin string, env []string) *rawLSP {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--log-level", "debug")
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	var emu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { emu.Lock(); defer emu.Unlock(); return stderr.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawLSP{t: t, Conn: rawrpc.New(t, out, in, rawrpc.Options{
		Framing:   rawrpc.ContentLength,
		Timeout:   30 * time.Second,
		OnRequest: func(c *rawrpc.Conn, req rawrpc.Message) { c.Answer(req.ID, nil) },
	})}
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
		if t.Failed() {
			emu.Lock()
			t.Logf("server stderr:\n%s", stderr.String())
			emu.Unlock()
		}
	})
	return c
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// serverRequests are the requests of method the server sent.
func (c *rawLSP) serverRequests(method string) []rawrpc.Message {
	var out []rawrpc.Message
	for _, m := range c.Seen() {
		if m.Method == method && len(m.ID) > 0 {
			out = append(out, m)
		}
	}
	return out
}

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// inlineWorkspace writes the files into a new workspace folder.
func inlineWorkspace(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// initialize sends initialize and initialized, with the client's
// inlineCompletion capability (dynamic registration when dynamic), and
// returns the server's capabilities.
func (c *rawLSP) initialize(root string, dynamic bool) map[string]json.RawMessage {
	c.t.Helper()
	return c.initializeWith(root, dynamic, nil)
}

// initializeWith is initialize with initializationOptions opts.
func (c *rawLSP) initializeWith(root string, dynamic bool, opts any) map[string]json.RawMessage {
	c.t.Helper()
	res := c.Call("initialize", map[string]any{
		"initializationOptions": opts,
		"processId":             nil,
		"rootUri":               fileURI(root),
		"workspaceFolders":      []any{map[string]any{"uri": fileURI(root), "name": "w"}},
		"capabilities": map[string]any{
			"textDocument": map[string]any{"inlineCompletion": map[string]any{"dynamicRegistration": dynamic}},
		},
	})
	if res.Error != nil {
		c.t.Fatalf("initialize: %s", res.Error.Message)
	}
	var r struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(res.Result, &r); err != nil {
		c.t.Fatal(err)
	}
	c.Notify("initialized", map[string]any{})
	return r.Capabilities
}

func (c *rawLSP) open(path, lang, text string) {
	c.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": fileURI(path), "languageId": lang, "version": 1, "text": text}})
}

func inlineParams(path string, line, char int, kind int) map[string]any {
	return map[string]any{
		"textDocument": map[string]any{"uri": fileURI(path)},
		"position":     map[string]any{"line": line, "character": char},
		"context":      map[string]any{"triggerKind": kind},
	}
}

type inlineList struct {
	Items []struct {
		InsertText string `json:"insertText"`
		Range      *struct {
			Start struct{ Line, Character int } `json:"start"`
		} `json:"range"`
	} `json:"items"`
}

func decodeInline(t *testing.T, m rawrpc.Message) inlineList {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("inlineCompletion failed: %d %s", m.Error.Code, m.Error.Message)
	}
	var l inlineList
	if err := json.Unmarshal(m.Result, &l); err != nil {
		t.Fatalf("inlineCompletion result %s: %v", m.Result, err)
	}
	return l
}

// waitUntil waits for cond, checking it each millisecond, at most 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

const inlineMain = `package main

import "fmt"

func main() {
	total := Add(1, 2)
	fmt.Println(
}
`

func TestServeInlineCompletion(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())
	settings := func(model *fakemodel.Server, completion map[string]any) []string {
		return userSettingsEnv(t, map[string]any{"baseURL": model.URL(), "model": "chat-model", "completion": completion})
	}

	t.Run("off by default: no capability, and a request gets nothing", func(t *testing.T) {
		model, _ := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "x", Times: -1}}})
		defer model.Close()
		root := inlineWorkspace(t, map[string]string{"main.go": inlineMain})
		c := startRawLSP(t, bin, userSettingsEnv(t, map[string]any{"baseURL": model.URL(), "model": "m"}))
		caps := c.initialize(root, false)
		if _, ok := caps["inlineCompletionProvider"]; ok {
			t.Errorf("inlineCompletionProvider declared while completion is off: %s", caps["inlineCompletionProvider"])
		}
		c.open(filepath.Join(root, "main.go"), "go", inlineMain)
		l := decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(filepath.Join(root, "main.go"), 6, 13, 1)))
		if len(l.Items) != 0 || len(model.Requests()) != 0 {
			t.Errorf("completion off: items %+v, model requests %d; want none", l.Items, len(model.Requests()))
		}
	})

	t.Run("a request at the cursor returns the FIM model's text", func(t *testing.T) {
		model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
			{Match: &fakemodel.Match{Prompt: "fmt.Println(", Suffix: "}"}, Text: "total)", Times: -1},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer model.Close()
		root := inlineWorkspace(t, map[string]string{"main.go": inlineMain})
		c := startRawLSP(t, bin, settings(model, map[string]any{"enabled": true, "model": "fim-model"}))
		caps := c.initialize(root, false)
		if string(caps["inlineCompletionProvider"]) != "true" {
			t.Fatalf("inlineCompletionProvider = %s; want true (capabilities %v)", caps["inlineCompletionProvider"], caps)
		}
		path := filepath.Join(root, "main.go")
		c.open(path, "go", inlineMain)
		l := decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(path, 6, 13, 1)))
		if len(l.Items) != 1 || l.Items[0].InsertText != "total)" {
			t.Fatalf("items = %+v; want one item inserting %q", l.Items, "total)")
		}
		if r := l.Items[0].Range; r == nil || r.Start.Line != 6 || r.Start.Character != 13 {
			t.Errorf("range = %+v; want the cursor 6:13", r)
		}
		reqs := model.Requests()
		if len(reqs) != 1 || reqs[0].Completion == nil {
			t.Fatalf("model requests = %d (completion %v); want one request to the completions endpoint", len(reqs), len(reqs) == 1 && reqs[0].Completion != nil)
		}
		got := reqs[0].Completion
		if got.Model != "fim-model" || !strings.HasSuffix(fmt.Sprint(got.Prompt), "\tfmt.Println(") || !strings.HasPrefix(got.Suffix, "\n}") {
			t.Errorf("FIM request model %q prompt %q suffix %q; want fim-model, the text before the cursor, the text after", got.Model, got.Prompt, got.Suffix)
		}
		if len(got.Stop) == 0 || got.Stop[0] != "\n" {
			t.Errorf("stop = %q; want a single line (stop at the newline) in the middle of a line", got.Stop)
		}
		// The same place again: the cache answers, the model is not asked.
		l = decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(path, 6, 13, 2)))
		if len(l.Items) != 1 || l.Items[0].InsertText != "total)" || len(model.Requests()) != 1 {
			t.Errorf("re-request: items %+v, model requests %d; want the cached item and no new request", l.Items, len(model.Requests()))
		}
	})

	t.Run("without a FIM model the chat model fills in", func(t *testing.T) {
		model, _ := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{
			{Match: &fakemodel.Match{LastUser: "fmt.Println(<CURSOR>"}, Text: "```go\ntotal)\n```", Times: -1},
		}})
		defer model.Close()
		root := inlineWorkspace(t, map[string]string{"main.go": inlineMain})
		c := startRawLSP(t, bin, settings(model, map[string]any{"enabled": true}))
		c.initialize(root, false)
		path := filepath.Join(root, "main.go")
		c.open(path, "go", inlineMain)
		l := decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(path, 6, 13, 1)))
		if len(l.Items) != 1 || l.Items[0].InsertText != "total)" {
			t.Fatalf("items = %+v; want %q from the chat answer, fence removed", l.Items, "total)")
		}
		if reqs := model.Requests(); len(reqs) != 1 || reqs[0].Completion != nil || reqs[0].Chat.Model != "chat-model" {
			t.Errorf("want one chat request to chat-model; got %d", len(reqs))
		}
	})

	t.Run("a cancelled request answers within 100 ms while the model still works", func(t *testing.T) {
		model, _ := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "late", Gate: "never", Times: -1}}})
		defer model.Close()
		root := inlineWorkspace(t, map[string]string{"main.go": inlineMain})
		c := startRawLSP(t, bin, settings(model, map[string]any{"enabled": true, "model": "fim"}))
		c.initialize(root, false)
		path := filepath.Join(root, "main.go")
		c.open(path, "go", inlineMain)
		id, reply := c.Start("textDocument/inlineCompletion", inlineParams(path, 6, 13, 1))
		waitUntil(t, "the model to receive the request", func() bool { return len(model.Requests()) == 1 })
		sent := time.Now()
		c.Notify("$/cancelRequest", map[string]any{"id": id})
		select {
		case r := <-reply:
			took := r.At.Sub(sent)
			if r.Error == nil || r.Error.Code != -32800 {
				t.Errorf("reply = %s %+v; want the RequestCancelled error -32800", r.Result, r.Error)
			}
			// The machine may be loaded (tests share it): the bound is
			// 100 ms beyond what the server takes to answer a request
			// that waits for nothing, timed right after under the same
			// load.
			p0 := time.Now()
			c.Call("textDocument/inlineCompletion", inlineParams(filepath.Join(root, "closed.go"), 0, 0, 1))
			ping := time.Since(p0)
			if took > 100*time.Millisecond+ping {
				t.Errorf("the cancelled request answered after %v (a request that waits for nothing: %v); want within 100 ms", took, ping)
			}
			t.Logf("cancelled request answered %v after $/cancelRequest (a request that waits for nothing: %v)", took, ping)
		case <-time.After(10 * time.Second):
			t.Fatal("the cancelled request did not answer while the model held its answer")
		}
		// The server remains responsive.
		if r := c.Call("shutdown", nil); r.Error != nil {
			t.Errorf("shutdown: %s", r.Error.Message)
		}
	})

	t.Run("a .env file never reaches the model", func(t *testing.T) {
		const secret = "hunter2-do-not-send"
		env := "DB_PASSWORD=" + secret + "\nfunc Add(a, b int) int // " + secret + "\n"
		model, _ := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "total)", Times: -1}}})
		defer model.Close()
		root := inlineWorkspace(t, map[string]string{"main.go": inlineMain, ".env": env})
		c := startRawLSP(t, bin, settings(model, map[string]any{"enabled": true, "model": "fim"}))
		c.initialize(root, false)
		envPath, mainPath := filepath.Join(root, ".env"), filepath.Join(root, "main.go")
		c.open(envPath, "dotenv", env)
		c.open(mainPath, "go", inlineMain)
		// In the .env file itself: nothing is sent, nothing comes back.
		for _, kind := range []int{1, 2} {
			l := decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(envPath, 0, 3, kind)))
			if len(l.Items) != 0 {
				t.Errorf("completion in .env returned %+v; want nothing", l.Items)
			}
		}
		if n := len(model.Requests()); n != 0 {
			t.Fatalf("a completion in .env sent %d model requests; want none", n)
		}
		// In main.go, with the .env open beside it (its line declares the
		// Add the cursor's lines call): its text is not in the context.
		l := decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(mainPath, 6, 13, 1)))
		if len(l.Items) != 1 {
			t.Fatalf("completion in main.go: items %+v; want one", l.Items)
		}
		reqs := model.Requests()
		if len(reqs) != 1 {
			t.Fatalf("model requests = %d; want 1", len(reqs))
		}
		for _, r := range reqs {
			if strings.Contains(string(r.Body), secret) || strings.Contains(string(r.Body), "DB_PASSWORD") {
				t.Errorf("the .env file's text reached the model: %s", r.Body)
			}
		}
	})

	t.Run("turned on after start, it is registered dynamically, and off again unregistered", func(t *testing.T) {
		model, _ := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "total)", Times: -1}}})
		defer model.Close()
		root := inlineWorkspace(t, map[string]string{"main.go": inlineMain})
		c := startRawLSP(t, bin, settings(model, map[string]any{"enabled": false, "model": "fim"}))
		if caps := c.initialize(root, true); caps["inlineCompletionProvider"] != nil {
			t.Fatalf("declared while off: %s", caps["inlineCompletionProvider"])
		}
		path := filepath.Join(root, "main.go")
		c.open(path, "go", inlineMain)
		c.Notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"agentls": map[string]any{"completion": map[string]any{"enabled": true}}}})
		waitUntil(t, "client/registerCapability", func() bool { return len(c.serverRequests("client/registerCapability")) == 1 })
		reg := c.serverRequests("client/registerCapability")[0]
		if !strings.Contains(string(reg.Params), `"method":"textDocument/inlineCompletion"`) {
			t.Errorf("registration %s; want textDocument/inlineCompletion", reg.Params)
		}
		l := decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(path, 6, 13, 1)))
		if len(l.Items) != 1 || l.Items[0].InsertText != "total)" {
			t.Errorf("after registration: items %+v; want the model's text", l.Items)
		}
		c.Notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"agentls": map[string]any{"completion": map[string]any{"enabled": false}}}})
		waitUntil(t, "client/unregisterCapability", func() bool { return len(c.serverRequests("client/unregisterCapability")) == 1 })
		n := len(model.Requests())
		l = decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(path, 5, 1, 1)))
		if len(l.Items) != 0 || len(model.Requests()) != n {
			t.Errorf("turned off: items %+v, model asked again: %v", l.Items, len(model.Requests()) != n)
		}
	})

	t.Run("the editor's settings cannot send completions to another endpoint", func(t *testing.T) {
		for _, how := range []string{"initializationOptions", "didChangeConfiguration", "didChangeConfiguration with its own FIM model"} {
			t.Run(how, func(t *testing.T) {
				own, _ := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "total)", Times: -1}}})
				defer own.Close()
				other, _ := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "stolen", Times: -1}}})
				defer other.Close()
				root := inlineWorkspace(t, map[string]string{"main.go": inlineMain})
				c := startRawLSP(t, bin, settings(own, map[string]any{"enabled": true, "model": "fim"}))
				redirect := map[string]any{"baseURL": other.URL(), "completion": map[string]any{"enabled": true}}
				if how == "didChangeConfiguration with its own FIM model" {
					redirect["completion"] = map[string]any{"enabled": true, "model": "other-fim"}
				}
				if how == "initializationOptions" {
					c.initializeWith(root, false, map[string]any{"agentls": redirect})
				} else {
					c.initialize(root, false)
					c.Notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"agentls": redirect}})
				}
				path := filepath.Join(root, "main.go")
				c.open(path, "go", inlineMain)
				l := decodeInline(t, c.Call("textDocument/inlineCompletion", inlineParams(path, 6, 13, 1)))
				if len(other.Requests()) != 0 {
					t.Errorf("the endpoint only the editor's settings name received %d completion requests", len(other.Requests()))
				}
				for _, it := range l.Items {
					if it.InsertText == "stolen" {
						t.Errorf("the other endpoint's answer was shown")
					}
				}
			})
		}
	})
}
