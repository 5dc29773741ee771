// Command mcpserver is a real MCP server over stdio, built with the same
// Go SDK agentls uses, for the tests: it echoes, adds, answers with a big
// result, reads its environment, crashes or hangs on request, and adds a
// tool (announcing tools/list_changed), floods (a text of any size in one
// message; -tools more tools, of -schema bytes each). With -hang it never
// answers anything; with -fail it exits at once with a message on stderr;
// with -state DIR it first keeps a state file in DIR ("beside": the folder
// of its own executable), and exits with the error on stderr when it
// cannot.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callIDs reads stdin for the SDK and keeps the id of the last
// tools/call request, which flood answers itself.
type callIDs struct {
	mu   sync.Mutex
	line []byte
	id   string
}

var calls = &callIDs{}

func (c *callIDs) Read(p []byte) (int, error) {
	n, err := os.Stdin.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range p[:n] {
		if b != '\n' {
			c.line = append(c.line, b)
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(c.line, &m) == nil && m.Method == "tools/call" {
			c.id = string(m.ID)
		}
		c.line = c.line[:0]
	}
	return n, err
}

func (c *callIDs) Close() error { return os.Stdin.Close() }

func (c *callIDs) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	hang := flag.Bool("hang", false, "read requests and never answer")
	fail := flag.Bool("fail", false, "exit at once with status 2")
	state := flag.String("state", "", `a folder to keep state.json in ("beside": the executable's)`)
	many := flag.Int("tools", 0, "offer this many more tools (t00001, ...)")
	schema := flag.Int("schema", 0, "bytes of each extra tool's input schema (its description of a property)")
	flag.Parse()
	if *state != "" {
		dir := *state
		if dir == "beside" {
			exe, err := os.Executable()
			if err != nil {
				fmt.Fprintln(os.Stderr, "mcpserver:", err)
				os.Exit(1)
			}
			dir = filepath.Dir(exe)
		}
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"started": true}`), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver: cannot keep its state:", err)
			os.Exit(1)
		}
	}
	if *fail {
		fmt.Fprintln(os.Stderr, "mcpserver: cannot open its database (on purpose)")
		os.Exit(2)
	}
	if *hang {
		_, _ = io.Copy(io.Discard, os.Stdin)
		select {}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "agentls-test", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(in.A + in.B)), nil, nil
		})
	type bigIn struct {
		Lines int `json:"lines"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer with that many numbered lines."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			var b strings.Builder
			for i := 1; i <= in.Lines; i++ {
				fmt.Fprintf(&b, "line %06d of the big answer\n", i)
			}
			return text(b.String()), nil, nil
		})
	type envIn struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Read one variable of the server's environment."},
		func(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				return text(in.Name + " is not set"), nil, nil
			}
			return text(in.Name + "=" + v), nil, nil
		})
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail as a tool does (isError)."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			r := text("the thing is broken")
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit in the middle of the call."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "mcpserver: crashing in the middle of a call (on purpose)")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			select {} // not even when cancelled
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add the tool 'extra' (the server announces tools/list_changed)."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "A tool added later."},
				func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
					return text("extra tool here"), nil, nil
				})
			return text("added the tool extra"), nil, nil
		})
	type floodIn struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "flood", Description: "Answer with a text of that many bytes, in one message."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in floodIn) (*mcp.CallToolResult, any, error) {
			// Written straight to stdout as it goes (never held whole):
			// one line, the response to this call.
			fmt.Fprintf(os.Stderr, "mcpserver: sending a text of %d bytes\n", in.Bytes)
			head := `{"jsonrpc":"2.0","id":` + calls.last() + `,"result":{"content":[{"type":"text","text":"`
			chunk := strings.Repeat("flood of the MCP server ", 4096)
			w := bufio.NewWriterSize(os.Stdout, 1<<16)
			w.WriteString(head)
			for left := in.Bytes; left > 0; left -= len(chunk) {
				w.WriteString(chunk[:min(left, len(chunk))])
			}
			w.WriteString("\"}]}}\n")
			if err := w.Flush(); err != nil {
				fmt.Fprintln(os.Stderr, "mcpserver: the flood was cut:", err)
			}
			<-ctx.Done() // answered already
			return nil, nil, ctx.Err()
		})
	for i := range *many {
		desc := strings.Repeat("d", *schema)
		in := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "description": desc}}}
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%05d", i), Description: "One of many tools.", InputSchema: in},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	}
	if err := s.Run(context.Background(), &mcp.IOTransport{Reader: calls, Writer: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}
