package redteam

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/procmem"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/tools/mcp/mcptest"
)

const famUnbounded = "unbounded outside programs"

// The bounds an attempt is judged by: the server's peak RSS during the
// task, and the largest request to the model.
const (
	unboundedMaxRSS     = 200 << 20
	unboundedMaxRequest = 1 << 20
)

var floodlsBuild struct {
	once sync.Once
	path string
	err  error
}

// floodlsBin builds langserver/testdata/floodls (a language server that
// floods what it is told to) outside /tmp, where the sandbox lets it run.
func floodlsBin(t *testing.T) string {
	t.Helper()
	floodlsBuild.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			floodlsBuild.err = err
			return
		}
		_ = os.MkdirAll(cache, 0o755)
		dir, err := os.MkdirTemp(cache, "agentls-redteam-floodls-")
		if err != nil {
			floodlsBuild.err = err
			return
		}
		floodlsBuild.path = filepath.Join(dir, "floodls")
		if out, err := exec.Command("go", "build", "-o", floodlsBuild.path, "../langserver/testdata/floodls").CombinedOutput(); err != nil {
			floodlsBuild.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if floodlsBuild.err != nil {
		t.Fatalf("building floodls: %v", floodlsBuild.err)
	}
	return floodlsBuild.path
}

// discarded is the size named by a result that says a message over the
// limit was read through ("a message of N bytes exceeds the limit"): the
// reader names it only once it has read all N bytes.
var discarded = regexp.MustCompile(`a message of (\d+) bytes exceeds the limit`)

// TestUnboundedOutsidePrograms: a language server or an MCP server that
// answers with a flood (hundreds of thousands of references, a 24 MB
// hover, 4,000 tools, a 80 MB HTTP body or stdio line) is bounded at the
// reader: the tool result says so, no model request carries the flood,
// the server's peak RSS stays under 200 MB, and the next task answers.
// Each attempt proves the flood was sent: the reader counted the bytes
// it read through, or the server counted what it wrote.
func TestUnboundedOutsidePrograms(t *testing.T) {
	files := map[string]string{"go.mod": "module w\n\ngo 1.22\n", "main.go": "package main\n\nfunc Total(xs []int) int { return len(xs) }\n"}
	ls := func(args ...string) map[string]any {
		return map[string]any{"languageServers": map[string]any{"go": map[string]any{"command": floodlsBin(t), "args": args}}}
	}
	attempt(t, famUnbounded, "references flood: 400,000 locations from the workspace's language server", func(t *testing.T) outcome {
		return floodAttempt(t, ls("-refs", "400000"), files, call("c1", "references", `{"file":"main.go","symbol":"Total"}`), func(result string) (bool, string) {
			m := discarded.FindStringSubmatch(result)
			if m == nil {
				return false, "no flood was read through"
			}
			n, _ := strconv.Atoi(m[1])
			return n > 400000*50, fmt.Sprintf("the reader read %d bytes through", n)
		})
	})
	attempt(t, famUnbounded, "huge hover: a 24 MB hover text", func(t *testing.T) outcome {
		return floodAttempt(t, ls("-hover", fmt.Sprint(24<<20)), files, call("c1", "hover", `{"file":"main.go","symbol":"Total"}`), func(result string) (bool, string) {
			m := discarded.FindStringSubmatch(result)
			if m == nil {
				return false, "no flood was read through"
			}
			n, _ := strconv.Atoi(m[1])
			return n >= 24<<20, fmt.Sprintf("the reader read %d bytes through", n)
		})
	})
	attempt(t, famUnbounded, "huge hover within the message limit: 6 MB of text", func(t *testing.T) outcome {
		return floodAttempt(t, ls("-hover", fmt.Sprint(6<<20)), files, call("c1", "hover", `{"file":"main.go","symbol":"Total"}`), func(result string) (bool, string) {
			ok := strings.Contains(result, "bytes cut: the hover text was")
			return ok, "the hover text was cut: " + regexp.MustCompile(`the hover text was \d+ bytes`).FindString(result)
		})
	})
	mcpBin := lsptest.MCPTestServer(t)
	attempt(t, famUnbounded, "tool-list flood: an MCP server offers 4,000 tools", func(t *testing.T) outcome {
		settings := map[string]any{"mcpServers": map[string]any{"many": map[string]any{"command": mcpBin, "args": []string{"-tools", "4000", "-schema", "1000"}}}}
		var s *server
		o := floodAttemptWith(t, settings, files, call("c1", "mcp__many__t00001", `{}`), &s, func(result string) (bool, string) {
			return strings.Contains(result, `"content":"ok"`), "a tool of the flood was called and answered"
		})
		if o.escaped {
			return o
		}
		first := string(s.model.Requests()[0].Body)
		if n := strings.Count(first, `"name":"mcp__many__`); n > mcp.MaxTools {
			return escaped("the model was offered %d of the server's tools", n)
		}
		if !strings.Contains(s.fromServer(), fmt.Sprintf("offers more than %d tools", mcp.MaxTools)) {
			return escaped("the editor was not told that tools were left out")
		}
		return held("%s; %d tools offered, and the editor was told the server offers more than %d", o.evidence, strings.Count(first, `"name":"mcp__many__`), mcp.MaxTools)
	})
	attempt(t, famUnbounded, "huge HTTP body: an HTTP MCP server answers a call with 80 MB", func(t *testing.T) outcome {
		fl := &mcptest.Flood{Bytes: 10 * mcp.MaxMessageBytes}
		hs := httptest.NewServer(fl)
		defer hs.Close()
		settings := map[string]any{"mcpServers": map[string]any{"remote": map[string]any{"type": "http", "url": hs.URL}}}
		return floodAttempt(t, settings, files, call("c1", "mcp__remote__flood", `{}`), func(result string) (bool, string) {
			ok := strings.Contains(result, fmt.Sprintf("over the limit of %d bytes", mcp.MaxMessageBytes)) && fl.Sent() > mcp.MaxMessageBytes
			return ok, fmt.Sprintf("the server wrote %d bytes before the client stopped reading", fl.Sent())
		})
	})
	attempt(t, famUnbounded, "huge stdio message: a stdio MCP server answers a call with one 80 MB line", func(t *testing.T) outcome {
		settings := map[string]any{"mcpServers": map[string]any{"test": map[string]any{"command": mcpBin}}}
		return floodAttempt(t, settings, files, call("c1", "mcp__test__flood", fmt.Sprintf(`{"bytes":%d}`, 10*mcp.MaxMessageBytes)), func(result string) (bool, string) {
			// The reader trips only after more than the limit of one line.
			ok := strings.Contains(result, fmt.Sprintf("a message of more than %d bytes", mcp.MaxMessageBytes))
			return ok, "the reader read more than the limit of one line"
		})
	})
}

func floodAttempt(t *testing.T, settings map[string]any, files map[string]string, c fakemodel.ToolCall, live func(result string) (bool, string)) outcome {
	var s *server
	return floodAttemptWith(t, settings, files, c, &s, live)
}

// floodAttemptWith runs one task whose model calls c, and judges it: the
// flood must be proven (live), the result the model read bounded, every
// model request small, the peak RSS under the bound, and the next task
// answered.
func floodAttemptWith(t *testing.T, settings map[string]any, files map[string]string, c fakemodel.ToolCall, sp **server, live func(result string) (bool, string)) outcome {
	settings["approval"] = "auto"
	s := newServer(t, []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{c}},
		{Text: "Done.", FinishReason: "stop", Times: -1},
	}, files, serverOpts{settings: settings, cfg: lsptest.Config{WorkDoneProgress: true}})
	*sp = s
	procmem.ResetPeak(t)
	r, err := s.run(t, map[string]any{"prompt": "use the tool", "mode": "edit"})
	if err != nil || r.Status != "completed" {
		return escaped("the task failed: %+v %v", r, err)
	}
	peak := procmem.Peak(t, procmem.Self)
	reqs := s.model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests: the tool's result never reached the model", len(reqs))
	}
	body := string(reqs[1].Body)
	i := strings.LastIndex(body, `"role":"tool"`)
	if i < 0 {
		t.Fatalf("no tool result in the model's second request")
	}
	result := body[i:]
	result = strings.ReplaceAll(result, `\"`, `"`)
	ok, proof := live(result)
	if !ok {
		t.Fatalf("the flood was not proven (%s): the attack did not happen as meant; result: %.600s", proof, result)
	}
	var problems []string
	for k, q := range reqs {
		if len(q.Body) > unboundedMaxRequest {
			problems = append(problems, fmt.Sprintf("model request %d is %d bytes", k+1, len(q.Body)))
		}
	}
	if peak > unboundedMaxRSS {
		problems = append(problems, fmt.Sprintf("peak RSS %d MB", peak>>20))
	}
	if n, err := s.run(t, map[string]any{"prompt": "are you there?", "mode": "ask"}); err != nil || n.Answer != "Done." {
		problems = append(problems, fmt.Sprintf("the next task did not answer: %+v %v", n, err))
	}
	if len(problems) > 0 {
		return escaped("%s", strings.Join(problems, "; "))
	}
	biggest := 0
	for _, q := range reqs {
		biggest = max(biggest, len(q.Body))
	}
	return held("%s; peak RSS %d MB, largest model request %d bytes", proof, peak>>20, biggest)
}
