package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestACPTakesNoArguments(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var out, errOut bytes.Buffer
	code := mainExit([]string{"acp", "--model", "x"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "takes no arguments") {
		t.Errorf("agentls acp --model x: exit %d, stderr %q; want 2 and the reason", code, errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q; want nothing", out.String())
	}
}

// TestACPStdoutCarriesOnlyTheProtocol: every line agentls acp writes is a
// JSON-RPC 2.0 message, and it exits 0 when the client closes stdin.
func TestACPStdoutCarriesOnlyTheProtocol(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- mainExit([]string{"acp"}, stdio{in: inR, out: outW, err: &errOut})
		outW.Close()
	}()
	fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
	fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`+"\n", dir)
	sc := bufio.NewScanner(outR)
	answered := map[float64]bool{}
	for !answered[1] || !answered[2] {
		if !sc.Scan() {
			t.Fatalf("stdout ended before both answers: %v; stderr:\n%s", sc.Err(), errOut.String())
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC 2.0: %q", sc.Text())
		}
		if id, ok := m["id"].(float64); ok && m["result"] != nil {
			answered[id] = true
		}
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d after stdin closed; want 0; stderr:\n%s", c, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("agentls acp still running 20 s after stdin closed")
	}
}
