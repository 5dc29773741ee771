package mcp

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/internal/procmem"
	"github.com/agentls/agentls/tools/mcp/mcptest"
)

// maxRSS is the most the test process may hold while a server floods it
// (under the race detector, with its shadow memory, 5 times that).
var maxRSS int64 = map[bool]int64{false: 200 << 20, true: 1000 << 20}[raceEnabled]

// flood is the size of a flood: 10 times the limit (under the race
// detector 3 times, still over it: it reads every byte ~10 times slower).
var flood = map[bool]int{false: 10, true: 3}[raceEnabled] * MaxMessageBytes

// TestStdioFloodsAreBounded: a real stdio server (testdata/mcpserver)
// sends one message at 10 times MaxMessageBytes: the call fails with an
// error that names the limit, the process's peak RSS stays under 200 MB,
// and the next call starts the server again and is answered. A message
// within the limit reaches the model cut like any result.
func TestStdioFloodsAreBounded(t *testing.T) {
	f := newFixture(t)
	got := f.tools(t, nil, stdio("test"))
	procmem.ResetPeak(t)
	start := time.Now()
	r := call(t, got["mcp__test__flood"], fmt.Sprintf(`{"bytes":%d}`, flood))
	took := time.Since(start)
	peak := procmem.Peak(t, procmem.Self)
	if !r.IsError || !strings.Contains(r.Text, fmt.Sprintf("over the limit of %d bytes", MaxMessageBytes)) || !strings.Contains(r.Text, "starts again on the next call") {
		t.Errorf("result of the flood: %.400s", r.Text)
	}
	if peak > maxRSS {
		t.Errorf("peak RSS %d MB; want under %d MB", peak>>20, maxRSS>>20)
	}
	if again := call(t, got["mcp__test__echo"], `{"text":"after"}`); again.IsError || again.Text != "echo: after" {
		t.Errorf("the call after the flood: %+v", again)
	}
	t.Logf("a %d MB message: refused after %s, peak RSS %d MB", flood>>20, took.Round(time.Millisecond), peak>>20)

	within := call(t, got["mcp__test__flood"], fmt.Sprintf(`{"bytes":%d}`, 6<<20))
	if within.IsError || len(within.Text) > MaxResultBytes+200 || !strings.Contains(within.Text, "bytes cut: the result was 6291456 bytes") {
		t.Errorf("a 6 MB result: %d bytes to the model, %.200s", len(within.Text), within.Text)
	}
}

// TestToolListsAreBounded: a server that offers 400 tools gives the
// model its first MaxTools, with a note; a tool whose input schema is
// over the limit is not offered, with a note.
func TestToolListsAreBounded(t *testing.T) {
	f := newFixture(t)
	list, errs := f.m.Tools(context.Background(), []ServerConfig{stdio("many", "-tools", "400", "-schema", "100")}, f.launch, nil)
	if len(list) != MaxTools {
		t.Errorf("%d tools offered; want %d", len(list), MaxTools)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("offers more than %d tools", MaxTools)) {
		t.Errorf("notes %v; want one saying only the first %d are offered", errs, MaxTools)
	}
	list, errs = f.m.Tools(context.Background(), []ServerConfig{stdio("wide", "-tools", "3", "-schema", fmt.Sprint(2*maxSchema))}, f.launch, nil)
	for _, tl := range list {
		if strings.HasPrefix(tl.Name(), "mcp__wide__t0") {
			t.Errorf("%s offered with a schema over the limit", tl.Name())
		}
	}
	if len(errs) != 3 || !strings.Contains(errs[0].Error(), "over the limit of 16384 bytes") {
		t.Errorf("notes %v; want three saying the schema is over the limit", errs)
	}
}

// TestHTTPBodiesAreBounded: a streamable HTTP server (on loopback)
// answers a call with a body at 10 times MaxMessageBytes, declared or
// chunked: the call fails with an error that names the limit and the
// process's peak RSS stays under 200 MB.
func TestHTTPBodiesAreBounded(t *testing.T) {
	for _, declared := range []bool{false, true} {
		t.Run(fmt.Sprintf("Content-Length declared %v", declared), func(t *testing.T) {
			fl := &mcptest.Flood{Bytes: flood, DeclareLength: declared}
			hs := httptest.NewServer(fl)
			defer hs.Close()
			f := newFixture(t)
			defer f.m.Close()
			got := f.tools(t, nil, ServerConfig{Name: "remote", Type: "http", URL: hs.URL, Source: FromSettings})
			procmem.ResetPeak(t)
			start := time.Now()
			r := call(t, got["mcp__remote__flood"], `{}`)
			took := time.Since(start)
			peak := procmem.Peak(t, procmem.Self)
			if !r.IsError || !strings.Contains(r.Text, fmt.Sprintf("over the limit of %d bytes", MaxMessageBytes)) {
				t.Errorf("result of the flood: %.400s", r.Text)
			}
			if peak > maxRSS {
				t.Errorf("peak RSS %d MB; want under %d MB", peak>>20, maxRSS>>20)
			}
			if !declared && fl.Sent() < MaxMessageBytes {
				t.Errorf("the server sent %d bytes; the flood did not happen", fl.Sent())
			}
			t.Logf("declared %v: refused after %s, the server sent %d MB, peak RSS %d MB", declared, took.Round(time.Millisecond), fl.Sent()>>20, peak>>20)
		})
	}
}
