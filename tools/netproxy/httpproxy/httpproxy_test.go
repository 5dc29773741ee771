package httpproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agentls/agentls/tools/netproxy"
	"golang.org/x/sys/unix"
)

// resolver answers from a map; a name with several answers gives the next
// one on each lookup (a rebinding name server), and every lookup is
// counted.
type resolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	lookups map[string]int
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	as, ok := r.answers[host]
	if !ok {
		return nil, fmt.Errorf("no such host %q", host)
	}
	i := min(r.lookups[host], len(as)-1)
	r.lookups[host]++
	return as[i], nil
}

// dialer lands every dial on the test server and records the address the
// proxy asked for.
type dialer struct {
	mu     sync.Mutex
	target string
	dialed []string
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.target)
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// TestProxyDecidesByNameAddressAndPort sends each request through a real
// proxy (TCP on both sides) and checks the answer, the event and the
// address dialed.
func TestProxyDecidesByNameAddressAndPort(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s %s", r.Host, r.URL.Path)
	}))
	defer up.Close()
	allow, err := netproxy.ParseAllowlist([]string{"allowed.test", "*.wild.test", "odd.test:8080", "private.test", "mixed.test", "rebind.test", "mapped.test"})
	if err != nil {
		t.Fatal(err)
	}
	const pub = "93.184.215.14"
	res := &resolver{lookups: map[string]int{}, answers: map[string][][]netip.Addr{
		"allowed.test": {addrs(pub)},
		"a.wild.test":  {addrs(pub)},
		"odd.test":     {addrs(pub)},
		"denied.test":  {addrs(pub)},
		"private.test": {addrs("10.0.0.7")},
		"mixed.test":   {addrs(pub, "127.0.0.1")},
		"mapped.test":  {addrs("::ffff:169.254.169.254")},
		// A rebinding name server: public for the check, loopback after.
		"rebind.test": {addrs(pub), addrs("127.0.0.1")},
	}}
	dl := &dialer{target: up.Listener.Addr().String()}
	var evMu sync.Mutex
	var events []netproxy.Event
	px := New(allow, netproxy.Options{Resolver: res, Dialer: dl})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go Serve(context.Background(), px, c, func(e netproxy.Event) { evMu.Lock(); events = append(events, e); evMu.Unlock() })
		}
	}()
	// send writes a raw request and returns the status line and body of
	// the proxy's answer (for CONNECT, the tunnel's HTTP answer after a
	// GET through it).
	send := func(raw string, connect bool) (string, string) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, raw)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return "no answer: " + err.Error(), ""
		}
		if connect && resp.StatusCode == 200 {
			io.WriteString(c, "GET /through HTTP/1.1\r\nHost: tunnel\r\nConnection: close\r\n\r\n")
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				return "tunnel: " + err.Error(), ""
			}
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.Status, string(b)
	}
	for _, c := range []struct {
		name, raw  string
		connect    bool
		wantStatus string
		wantBody   string // in the body
		wantDial   string // the address dialed, "" for none
	}{
		{"allowed name, CONNECT", "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n", true, "200 OK", "upstream saw tunnel /through", pub + ":443"},
		{"allowed name, plain HTTP", "GET http://allowed.test/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", false, "200 OK", "upstream saw allowed.test /x", pub + ":80"},
		{"name below a wildcard", "CONNECT a.wild.test:443 HTTP/1.1\r\n\r\n", true, "200 OK", "upstream saw", pub + ":443"},
		{"the wildcard's own domain", "CONNECT wild.test:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "not in the allowlist", ""},
		{"denied name", "CONNECT denied.test:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "not in the allowlist", ""},
		{"denied name, plain HTTP", "GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", false, "403 Forbidden", "not in the allowlist", ""},
		{"allowed Host header, denied URL", "GET http://denied.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", false, "403 Forbidden", "denied.test", ""},
		{"allowed name, other port", "CONNECT allowed.test:22 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "port 22 is not in the allowlist", ""},
		{"port of an entry with a port", "CONNECT odd.test:8080 HTTP/1.1\r\n\r\n", true, "200 OK", "upstream saw", pub + ":8080"},
		{"default port of an entry with a port", "CONNECT odd.test:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "not in the allowlist", ""},
		{"odd port spelling", "CONNECT allowed.test:0443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "bad port", ""},
		{"no port", "CONNECT allowed.test HTTP/1.1\r\n\r\n", true, "403 Forbidden", "host:port", ""},
		{"allowed name to a private address", "CONNECT private.test:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "10.0.0.7, which is not a public address", ""},
		{"one private address among public ones", "CONNECT mixed.test:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "127.0.0.1", ""},
		{"IPv4-mapped link-local", "CONNECT mapped.test:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "not a public address", ""},
		{"IP literal", "CONNECT 93.184.215.14:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "IP address", ""},
		{"IPv6 literal", "CONNECT [2606:4700::1111]:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "IP address", ""},
		{"loopback literal, plain HTTP", "GET http://127.0.0.1:80/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", false, "403 Forbidden", "IP address", ""},
		{"decimal address", "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "IP address", ""},
		{"userinfo before an allowed name", "CONNECT evil.test@allowed.test:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "user information", ""},
		{"userinfo in a plain URL", "GET http://u:p@allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", false, "403 Forbidden", "user information", ""},
		{"https in a plain request", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", false, "403 Forbidden", "only CONNECT", ""},
		{"origin-form request", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", false, "403 Forbidden", "only CONNECT", ""},
		{"localhost", "CONNECT localhost:443 HTTP/1.1\r\n\r\n", true, "403 Forbidden", "not in the allowlist", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dl.mu.Lock()
			dl.dialed = nil
			dl.mu.Unlock()
			status, body := send(c.raw, c.connect)
			if status != c.wantStatus || !strings.Contains(body, c.wantBody) {
				t.Errorf("got %q %q, want %q with %q", status, body, c.wantStatus, c.wantBody)
			}
			dl.mu.Lock()
			defer dl.mu.Unlock()
			if c.wantDial == "" && len(dl.dialed) > 0 || c.wantDial != "" && (len(dl.dialed) != 1 || dl.dialed[0] != c.wantDial) {
				t.Errorf("dialed %q, want %q", dl.dialed, c.wantDial)
			}
		})
	}
	evMu.Lock()
	defer evMu.Unlock()
	if len(events) == 0 || !events[0].Reached || events[0].Host != "allowed.test" || events[0].Port != 443 {
		t.Errorf("the first event is %+v, want allowed.test:443 reached", events)
	}
}

// TestProxyDialsTheAddressItChecked: a name server that answers a public
// address for the check and loopback afterwards (DNS rebinding) gets one
// lookup per connection, and the dial goes to the address checked.
func TestProxyDialsTheAddressItChecked(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	allow, _ := netproxy.ParseAllowlist([]string{"rebind.test"})
	res := &resolver{lookups: map[string]int{}, answers: map[string][][]netip.Addr{
		"rebind.test": {addrs("93.184.215.14"), addrs("127.0.0.1")},
	}}
	dl := &dialer{target: up.Listener.Addr().String()}
	px := New(allow, netproxy.Options{Resolver: res, Dialer: dl})
	ap, err := px.Decide(context.Background(), "rebind.test", 443)
	if err != nil || ap.String() != "93.184.215.14:443" {
		t.Fatalf("Decide = %v, %v", ap, err)
	}
	if res.lookups["rebind.test"] != 1 {
		t.Fatalf("%d lookups for one decision", res.lookups["rebind.test"])
	}
	// The next connection asks again, and the loopback answer is refused.
	if _, err := px.Decide(context.Background(), "rebind.test", 443); err == nil {
		t.Fatal("the second answer (127.0.0.1) was accepted")
	}
	// Through Serve: the dial goes to the address of the one lookup.
	res.lookups["rebind.test"] = 0
	a, b := net.Pipe()
	go Serve(context.Background(), px, a, nil)
	io.WriteString(b, "CONNECT rebind.test:443 HTTP/1.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(b), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	b.Close()
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if len(dl.dialed) != 1 || dl.dialed[0] != "93.184.215.14:443" || res.lookups["rebind.test"] != 1 {
		t.Fatalf("dialed %q after %d lookups", dl.dialed, res.lookups["rebind.test"])
	}
}

// TestBridgeCarriesConnectionsAndBoundsTheSummary drives a session as the
// supervisor does (a socket pair per connection, sent over the control
// socket) and checks the events and the summary's bound.
func TestBridgeCarriesConnectionsAndBoundsTheSummary(t *testing.T) {
	allow, _ := netproxy.ParseAllowlist([]string{"allowed.test"})
	px := New(allow, netproxy.Options{Resolver: &resolver{lookups: map[string]int{}, answers: map[string][][]netip.Addr{}}})
	s, theirs, err := px.Bridge()
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	ctrl := int(theirs.Fd())
	const n = 60
	for i := range n {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Sendmsg(ctrl, []byte{0}, unix.UnixRights(fds[1]), nil, 0); err != nil {
			t.Fatal(err)
		}
		unix.Close(fds[1])
		f := os.NewFile(uintptr(fds[0]), "client")
		fmt.Fprintf(f, "CONNECT host%d.test:443 HTTP/1.1\r\n\r\n", i)
		resp, err := http.ReadResponse(bufio.NewReader(f), nil)
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("connection %d: %v %v", i, resp, err)
		}
		f.Close()
	}
	ev := s.Close()
	if len(ev) != n || ev[0].Host != "host0.test" || ev[0].Reached {
		t.Fatalf("%d events, first %+v", len(ev), ev[0])
	}
	sum := netproxy.Summary(ev)
	if len(sum) != netproxy.MaxSummaryLines+1 || !strings.Contains(sum[netproxy.MaxSummaryLines], "and 10 more") {
		t.Fatalf("summary of %d lines, last %q", len(sum), sum[len(sum)-1])
	}
	if got := netproxy.Summary([]netproxy.Event{{Host: "a.test", Port: 443, Reached: true}, {Host: "a.test", Port: 443, Reached: true}}); len(got) != 1 || got[0] != "network: reached a.test:443 (2 times)" {
		t.Fatalf("summary %q", got)
	}
}
