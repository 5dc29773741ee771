// Command floodls is a real language server over stdio for the tests of
// the bounds on what a language server sends: it answers initialize and
// shutdown like any server, and floods the answers it is told to:
// references (-refs locations, or locations until the body is at least
// -refbytes bytes) and hover (a text of -hover bytes). Every other
// request gets null. It says on stderr how much it sent.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	refs := flag.Int("refs", 0, "locations in a references answer")
	refBytes := flag.Int("refbytes", 0, "locations in a references answer until its body has this many bytes")
	hover := flag.Int("hover", 0, "bytes of a hover text")
	flag.Parse()
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	for {
		body, err := readFrame(in)
		if err != nil {
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TextDocument struct {
					URI string `json:"uri"`
				} `json:"textDocument"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil {
			continue
		}
		if msg.Method == "exit" {
			os.Exit(0)
		}
		if msg.ID == nil {
			continue // a notification
		}
		var result answer = fixed("null")
		switch msg.Method {
		case "initialize":
			result = fixed(`{"capabilities":{"textDocumentSync":1,"referencesProvider":true,"hoverProvider":true,"definitionProvider":true,"documentSymbolProvider":true},"serverInfo":{"name":"floodls"}}`)
		case "textDocument/references":
			if *refs > 0 || *refBytes > 0 {
				result = locations(msg.Params.TextDocument.URI, *refs, *refBytes)
			}
		case "textDocument/hover":
			if *hover > 0 {
				result = hoverText(*hover)
			}
		case "textDocument/documentSymbol":
			result = fixed("[]")
		}
		head := append(append([]byte(`{"jsonrpc":"2.0","id":`), msg.ID...), `,"result":`...)
		n := len(head) + result.size + 1
		fmt.Fprintf(out, "Content-Length: %d\r\n\r\n", n)
		_, _ = out.Write(head)
		result.write(out)
		out.WriteByte('}')
		if err := out.Flush(); err != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "floodls: sent %d bytes answering %s\n", n, msg.Method)
	}
}

// answer is a result of a known size, written in pieces: a flood is never
// held whole, so it is sent as fast as the pipe takes it.
type answer struct {
	size  int
	write func(w io.Writer)
}

func fixed(s string) answer {
	return answer{len(s), func(w io.Writer) { io.WriteString(w, s) }}
}

// repeated is prefix, n times item (joined by sep), suffix.
func repeated(prefix, item, sep, suffix string, n int) answer {
	size := len(prefix) + n*len(item) + max(n-1, 0)*len(sep) + len(suffix)
	return answer{size, func(w io.Writer) {
		io.WriteString(w, prefix)
		chunk := strings.Repeat(item+sep, 1000)
		left := n
		for left > 1000 {
			io.WriteString(w, chunk)
			left -= 1000
		}
		if left > 0 {
			io.WriteString(w, strings.Repeat(item+sep, left-1)+item)
		}
		io.WriteString(w, suffix)
	}}
}

func readFrame(in *bufio.Reader) ([]byte, error) {
	n := -1
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("no Content-Length")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(in, b)
	return b, err
}

// locations is a JSON array of n locations in uri, or of as many as
// make minBytes.
func locations(uri string, n, minBytes int) answer {
	u, _ := json.Marshal(uri)
	item := fmt.Sprintf(`{"uri":%s,"range":{"start":{"line":5,"character":5},"end":{"line":5,"character":10}}}`, u)
	if n == 0 {
		n = minBytes/(len(item)+1) + 1
	}
	return repeated("[", item, ",", "]", n)
}

// hoverText is a markdown hover of at least n bytes: a signature, then
// lines.
func hoverText(n int) answer {
	line := `line of a hover text that never ends, sent by floodls to see it cut.\n`
	return repeated(`{"contents":{"kind":"markdown","value":"`+"```go\\nfunc Total(xs []int) int\\n```\\n", line, "", `"}}`, n/len(line)+1)
}
