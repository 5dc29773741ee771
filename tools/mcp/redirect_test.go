package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerLog records the configured headers each request of a server
// carried.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *headerLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, fmt.Sprintf("%s auth=%q key=%q team=%q", r.Method, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("X-Team")))
}

func (l *headerLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// TestRedirectToAnotherOriginDropsHeaders: an HTTP MCP server that
// redirects (301, 302, 307, 308) to another origin (a second server on
// loopback, another port) does not get the configured Authorization or
// any other configured header sent there; a redirect within the origin
// keeps them. With 307 and 308 the connection goes on at the new origin
// (its tool answers), so the headers were dropped from requests that
// really reached it.
func TestRedirectToAnotherOriginDropsHeaders(t *testing.T) {
	const token = "Bearer tok-9Lq2Wx7Zr4Mv8Ks1"
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := sdk.NewServer(&sdk.Implementation{Name: "elsewhere"}, nil)
			sdk.AddTool(srv, &sdk.Tool{Name: "ping", Description: "Answer pong."},
				func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
				})
			h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			other := &headerLog{}
			b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				other.add(r)
				h.ServeHTTP(w, r)
			}))
			defer b.Close()
			first := &headerLog{}
			a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				first.add(r)
				if r.URL.Path == "/mcp" {
					http.Redirect(w, r, "/same", code) // within the origin
					return
				}
				http.Redirect(w, r, b.URL+"/mcp", code)
			}))
			defer a.Close()

			cfg := ServerConfig{Name: "moved", Type: "http", URL: a.URL + "/mcp", Source: FromSettings,
				Headers: map[string]string{"Authorization": token, "X-Api-Key": "key-4Tz8Qp2Vn6", "X-Team": "blue"}}
			f := newFixture(t)
			defer f.m.Close()
			list, errs := f.m.Tools(context.Background(), []ServerConfig{cfg}, f.launch, nil)
			if code == http.StatusTemporaryRedirect || code == http.StatusPermanentRedirect {
				if len(errs) > 0 || len(list) != 1 {
					t.Fatalf("Tools = %d tools, %v; want the tool of the server redirected to", len(list), errs)
				}
				if r := call(t, list[0].(*Tool), `{}`); r.Text != "pong" {
					t.Errorf("ping = %+v; want pong from the other origin", r)
				}
			}
			got, to := first.list(), other.list()
			if len(got) < 2 || !strings.Contains(got[0], token) || !strings.Contains(got[1], token) || !strings.Contains(got[1], "blue") {
				t.Errorf("the configured origin got %v; want the headers on the request and on its redirect within the origin", got)
			}
			if len(to) == 0 {
				t.Fatalf("the redirect to the other origin was not followed (configured origin got %v)", got)
			}
			for _, r := range to {
				if strings.Contains(r, "tok-") || strings.Contains(r, "key-") || strings.Contains(r, "blue") {
					t.Errorf("the other origin got a configured header: %s", r)
				}
			}
		})
	}
}
