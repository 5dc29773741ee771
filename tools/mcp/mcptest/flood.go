// Package mcptest is a small streamable HTTP MCP server for the tests of
// the client's bounds: it offers one tool, "flood", and answers its call
// with a JSON body of a chosen size, written as it goes (never held
// whole), counting what it really sent.
package mcptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// Flood is an http.Handler speaking MCP's streamable HTTP transport.
type Flood struct {
	// Bytes is the size of the body that answers tools/call.
	Bytes int
	// DeclareLength sends the body's Content-Length (else it is chunked).
	DeclareLength bool

	sent atomic.Int64
}

// Sent is how many bytes of flood bodies the server wrote (the client may
// stop reading early: the rest was never sent).
func (f *Flood) Sent() int64 { return f.sent.Load() }

func (f *Flood) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if r.Method == http.MethodDelete {
			return
		}
		http.Error(w, "no event stream", http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if msg.ID == nil {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "flood-session")
	var result string
	switch msg.Method {
	case "initialize":
		v, _ := json.Marshal(msg.Params.ProtocolVersion)
		result = `{"protocolVersion":` + string(v) + `,"capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"flood","description":"Answer with a body of the server's chosen size.","inputSchema":{"type":"object"}}]}`
	case "tools/call":
		f.flood(w, msg.ID)
		return
	default:
		result = `{}`
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
}

// flood writes the tools/call answer: one text content of about Bytes.
func (f *Flood) flood(w http.ResponseWriter, id json.RawMessage) {
	head := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}`
	chunk := strings.Repeat("flood of the HTTP MCP server ", 2048)
	n := max(f.Bytes-len(head)-len(tail), 0) / len(chunk) * len(chunk)
	if f.DeclareLength {
		w.Header().Set("Content-Length", strconv.Itoa(len(head)+n+len(tail)))
	}
	w.WriteHeader(http.StatusOK)
	write := func(s string) bool {
		k, err := io.WriteString(w, s)
		f.sent.Add(int64(k))
		return err == nil
	}
	if !write(head) {
		return
	}
	for left := n; left > 0; left -= len(chunk) {
		if !write(chunk) {
			return
		}
	}
	write(tail)
}
