package redteam

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/tools/netproxy"
	"github.com/agentls/agentls/tools/netproxy/httpproxy"
)

const famAllow = "network by allowlist"

// testPublic stands for a public host in the attacks that need a name to
// resolve (the tests reach no internet): the proxy checks it as it checks
// any address, and the test dialer lands a dial to it on a local server.
const testPublic = "93.184.215.14"

// nameServer answers from a map; a name with several answers gives the
// next one on each lookup (the last one from then on).
type nameServer struct {
	mu      sync.Mutex
	answers map[string][]string
	lookups map[string]int
}

func (r *nameServer) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	as, ok := r.answers[host]
	if !ok {
		return nil, fmt.Errorf("no such host %q", host)
	}
	i := min(r.lookups[host], len(as)-1)
	r.lookups[host]++
	var out []netip.Addr
	for _, s := range strings.Split(as[i], ",") {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// publicDialer lands a dial to testPublic on port on the server at
// routes[port] (or at routes[0] for any other port); every other address is
// dialed for real, so a proxy that dialed a loopback address would reach
// the test's listener.
type publicDialer struct{ routes map[int]string }

func (d publicDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	ap, err := netip.ParseAddrPort(addr)
	if err == nil && ap.Addr().String() == testPublic {
		to, ok := d.routes[int(ap.Port())]
		if !ok {
			to = d.routes[0]
		}
		return nd.DialContext(ctx, network, to)
	}
	return nd.DialContext(ctx, network, addr)
}

// throughProxy runs line in the sandbox with px as its network and returns
// what it printed and the result's notes.
func throughProxy(t *testing.T, px *netproxy.Proxy, line string) (string, string) {
	t.Helper()
	root := t.TempDir()
	var out strings.Builder
	w := &lockedWriter{b: new(bytes.Buffer)}
	res, err := tools.Run(ctxFor(t), tools.RunSpec{
		Argv: []string{"/bin/sh", "-c", line}, Dir: root, Stdout: w, Stderr: w, Timeout: time.Minute,
		Sandbox: tools.SandboxOptions{Roots: []string{root}, Proxy: px},
	})
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	out.WriteString(w.String())
	notes := strings.Join(res.Notes, "\n")
	t.Logf("sandbox: %s; exit %d\n%s\nnotes:\n%s", res.Sandbox, res.ExitCode, out.String(), notes)
	if !strings.Contains(res.Sandbox, "proxy") {
		t.Fatalf("the command did not run with the proxy as its network (%s): nothing to attack", res.Sandbox)
	}
	return out.String(), notes
}

// withNetwork runs line in the sandbox with the network allowed (the
// guard off: commandNetwork true) and returns what it printed.
func withNetwork(t *testing.T, line string) string {
	t.Helper()
	root := t.TempDir()
	w := &lockedWriter{b: new(bytes.Buffer)}
	if _, err := tools.Run(ctxFor(t), tools.RunSpec{
		Argv: []string{"/bin/sh", "-c", line}, Dir: root, Stdout: w, Stderr: w, Timeout: time.Minute,
		Sandbox: tools.SandboxOptions{Roots: []string{root}, Network: true},
	}); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return w.String()
}

// live fails the attempt when got is empty: the attack did not reach the
// listener with the guard off either, so a held verdict would prove
// nothing.
func live(t *testing.T, how, got string) string {
	t.Helper()
	if got == "" {
		t.Fatalf("not live: %s did not reach the listener either", how)
	}
	return fmt.Sprintf("; live: %s reached it (%q)", how, got)
}

// rawProxy is a perl program that sends request (with PORT replaced) to
// the proxy the environment names and prints the answer's status line.
func rawProxy(request string) string {
	return perl(`my ($h, $p) = $ENV{HTTP_PROXY} =~ m{//([^:/]+):(\d+)} or die "no proxy in the environment";
socket(S, PF_INET, SOCK_STREAM, 6) or die "socket: $!"; connect(S, pack_sockaddr_in($p, inet_aton($h))) or die "connect $h:$p: $!";
syswrite(S, "` + strings.NewReplacer("\r\n", `\r\n`, "@", `\@`, "$", `\$`).Replace(request) + `"); my $l = <S>; print "proxy: $l";`)
}

// TestNetworkByAllowlist: with commandNetwork a list of domains, a
// command or a workspace's MCP server reaches nothing but allowed names at
// public addresses, through agentls's proxy; each attack's target is
// reached when the guard is off (the network allowed, or a proxy whose
// allowlist holds the target).
func TestNetworkByAllowlist(t *testing.T) {
	attempt(t, famAllow, "direct TCP to a host listener, around the proxy", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		host, port, _ := net.SplitHostPort(addr)
		line := perl(fmt.Sprintf(`socket(S, PF_INET, SOCK_STREAM, 6) or die "socket: $!"; connect(S, pack_sockaddr_in(%s, inet_aton("%s"))) or die "connect: $!"; syswrite(S, "direct");`, port, host))
		allow, _ := netproxy.ParseAllowlist([]string{"allowed.test"})
		throughProxy(t, httpproxy.New(allow, netproxy.Options{}), line)
		if g := got(); g != "" {
			return escaped("a direct connection reached the host: %q", g)
		}
		return held("nothing reached the listener%s", live(t, "the same connection with the network allowed", reachedBy(t, got, withNetwork, line)))
	})

	attempt(t, famAllow, "CONNECT to the listener's IP address", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		allow, _ := netproxy.ParseAllowlist([]string{"allowed.test"})
		line := "curl -sS --max-time 20 --noproxy '' -p http://" + addr + "/ 2>&1; echo ended"
		_, notes := throughProxy(t, httpproxy.New(allow, netproxy.Options{}), line)
		if g := got(); g != "" {
			return escaped("CONNECT to %s reached it: %q", addr, g)
		}
		if !strings.Contains(notes, "refused 127.0.0.1") {
			return escaped("the refusal is not in the result's notes: %q", notes)
		}
		return held("refused and noted (%s)%s", notes, heldLive(t, got, "curl -sS --max-time 20 http://"+addr+"/ 2>&1; echo ended"))
	})

	attempt(t, famAllow, "an allowlisted name that resolves to a private address", func(t *testing.T) outcome {
		// The production resolver and dialer: localhost is in /etc/hosts.
		addr, got := received(t, "tcp", "127.0.0.1:0")
		_, port, _ := net.SplitHostPort(addr)
		allow, err := netproxy.ParseAllowlist([]string{"localhost:" + port})
		if err != nil {
			t.Fatal(err)
		}
		line := "curl -sS --max-time 20 --noproxy '' -p http://localhost:" + port + "/ 2>&1; echo ended"
		_, notes := throughProxy(t, httpproxy.New(allow, netproxy.Options{}), line)
		if g := got(); g != "" {
			return escaped("localhost:%s reached: %q", port, g)
		}
		if !strings.Contains(notes, "which is not a public address") {
			return escaped("not refused for its address: %q", notes)
		}
		return held("refused: %s%s", notes, heldLive(t, got, "curl -sS --max-time 20 http://localhost:"+port+"/ 2>&1; echo ended"))
	})

	attempt(t, famAllow, "a name with a public and a loopback address", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		_, port, _ := net.SplitHostPort(addr)
		allow, _ := netproxy.ParseAllowlist([]string{"both.test:" + port})
		ns := &nameServer{lookups: map[string]int{}, answers: map[string][]string{"both.test": {"127.0.0.1," + testPublic}}}
		px := httpproxy.New(allow, netproxy.Options{Resolver: ns, Dialer: publicDialer{routes: map[int]string{}}})
		_, notes := throughProxy(t, px, "curl -sS --max-time 20 -p http://both.test:"+port+"/ 2>&1; echo ended")
		if g := got(); g != "" {
			return escaped("reached: %q", g)
		}
		return held("refused: %s%s", notes, heldLive(t, got, "curl -sS --max-time 20 http://127.0.0.1:"+port+"/ 2>&1; echo ended"))
	})

	attempt(t, famAllow, "DNS rebinding: public for the check, loopback for the dial", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		decoy, decoyGot := received(t, "tcp", "127.0.0.1:0")
		_, port, _ := net.SplitHostPort(addr)
		allow, _ := netproxy.ParseAllowlist([]string{"rebind.test:" + port})
		ns := &nameServer{lookups: map[string]int{}, answers: map[string][]string{"rebind.test": {testPublic, "127.0.0.1"}}}
		px := httpproxy.New(allow, netproxy.Options{Resolver: ns, Dialer: publicDialer{routes: map[int]string{0: decoy}}})
		throughProxy(t, px, rawProxy("CONNECT rebind.test:"+port+" HTTP/1.1\r\n\r\nrebound"))
		if g := got(); g != "" {
			return escaped("the dial went to the second answer: %q", g)
		}
		if d := decoyGot(); !strings.Contains(d, "rebound") {
			t.Fatalf("the checked address got nothing either (%q): the tunnel did not work", d)
		}
		// Live: a proxy that looked the name up again to dial it would
		// have dialed the listener.
		again, err := ns.LookupNetIP(context.Background(), "ip", "rebind.test")
		if err != nil || again[0].String() != "127.0.0.1" {
			t.Fatalf("the name server does not rebind: %v %v", again, err)
		}
		c, err := net.Dial("tcp", net.JoinHostPort(again[0].String(), port))
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("second lookup"))
		c.Close()
		return held("the tunnel went to the address checked%s", live(t, "a dial by the second answer", got()))
	})

	attempt(t, famAllow, "userinfo that hides the real host", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		allow, _ := netproxy.ParseAllowlist([]string{"allowed.test"})
		ns := &nameServer{lookups: map[string]int{}, answers: map[string][]string{"allowed.test": {testPublic}}}
		px := httpproxy.New(allow, netproxy.Options{Resolver: ns, Dialer: publicDialer{routes: map[int]string{}}})
		for _, req := range []string{
			"GET http://allowed.test:80@" + addr + "/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
			"CONNECT allowed.test:80@" + addr + " HTTP/1.1\r\n\r\n",
		} {
			if out, _ := throughProxy(t, px, rawProxy(req)); !strings.Contains(out, "proxy: HTTP/1.1 403") {
				t.Fatalf("the proxy did not answer the request: %q", out)
			}
		}
		if g := got(); g != "" {
			return escaped("reached: %q", g)
		}
		return held("refused%s", heldLive(t, got, "curl -sS --max-time 20 'http://allowed.test:80@"+addr+"/' 2>&1; echo ended"))
	})

	attempt(t, famAllow, "another port of an allowlisted name", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		decoy, _ := received(t, "tcp", "127.0.0.1:0")
		_, port, _ := net.SplitHostPort(addr)
		ns := &nameServer{lookups: map[string]int{}, answers: map[string][]string{"allowed.test": {testPublic}}}
		// The allowed host's ports 443 and 80 are the decoy; its other
		// port is the listener (an admin service on the same host).
		dl := publicDialer{routes: map[int]string{443: decoy, 80: decoy, 0: addr}}
		line := rawProxy("CONNECT allowed.test:" + port + " HTTP/1.1\r\n\r\nadmin")
		allow, _ := netproxy.ParseAllowlist([]string{"allowed.test"})
		if out, _ := throughProxy(t, httpproxy.New(allow, netproxy.Options{Resolver: ns, Dialer: dl}), line); !strings.Contains(out, "proxy: HTTP/1.1 403") {
			t.Fatalf("the proxy did not answer the CONNECT: %q", out)
		}
		if g := got(); g != "" {
			return escaped("port %s reached: %q", port, g)
		}
		// The guard off: an allowlist that names the port.
		wider, _ := netproxy.ParseAllowlist([]string{"allowed.test", "allowed.test:" + port})
		throughProxy(t, httpproxy.New(wider, netproxy.Options{Resolver: ns, Dialer: dl}), line)
		return held("refused%s", live(t, "the same CONNECT with the port allowed", got()))
	})

	attempt(t, famAllow, "a workspace MCP server: around the proxy, by address and by a loopback name", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		host, port, _ := net.SplitHostPort(addr)
		script := perl(fmt.Sprintf(`socket(S, PF_INET, SOCK_STREAM, 6) or die "socket: $!"; connect(S, pack_sockaddr_in(%s, inet_aton("%s"))) or die "connect: $!"; syswrite(S, "mcp direct");`, port, host)) +
			"; curl -sS --max-time 20 --noproxy '' -p http://" + addr + "/ ; curl -sS --max-time 20 --noproxy '' -p http://localhost:" + port + "/"
		allow, _ := netproxy.ParseAllowlist([]string{"localhost:" + port})
		runMCP := func(px *netproxy.Proxy, network bool) {
			root := t.TempDir()
			b, _ := jsonString(script)
			servers, err := mcp.ParseServers([]byte(`{"mcpServers": {"evil": {"command": "sh", "args": ["-c", `+b+`]}}}`), mcp.FromWorkspace)
			if err != nil || len(servers) != 1 {
				t.Fatalf("ParseServers: %v, %v", servers, err)
			}
			if network {
				servers[0].Network = &network
			}
			m := mcp.NewManager(nil)
			defer m.Close()
			launch := mcp.Launch{Dir: root, Roots: []string{root}, Commands: tools.NewCommands(), StateDir: filepath.Join(t.TempDir(), "state"), Proxy: px}
			if _, errs := m.Tools(context.Background(), servers, launch, nil); len(errs) != 1 {
				t.Fatalf("errors %v; want the attack line to end (it speaks no MCP)", errs)
			}
		}
		var log syncLog
		runMCP(httpproxy.New(allow, netproxy.Options{Log: slog.New(slog.NewTextHandler(&log, nil))}), false)
		if g := got(); g != "" {
			return escaped("the server reached the host: %q", g)
		}
		if l := log.String(); strings.Count(l, "network: refused") != 2 {
			t.Fatalf("the proxy did not refuse both requests (the attack did not reach it): %s", l)
		}
		runMCP(nil, true)
		return held("nothing reached the listener%s", live(t, "the same server with the network allowed", got()))
	})

	attempt(t, famAllow, "the user's list, end to end: a name that resolves to loopback is refused and the result says so", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		_, port, _ := net.SplitHostPort(addr)
		line := "curl -sS --max-time 20 --noproxy '' http://localhost:" + port + "/ 2>&1; echo ended"
		turns := []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", fmt.Sprintf(`{"command":%q}`, line))}},
			{Text: "Done.", FinishReason: "stop"},
		}
		s := newServer(t, turns, nil, serverOpts{settings: map[string]any{"commandNetwork": []string{"localhost:" + port}}})
		reply, err := s.run(t, map[string]any{"prompt": "fetch it", "mode": "edit"})
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(reply.Report)
		if err != nil {
			t.Fatal(err)
		}
		report, err := os.ReadFile(u.Path)
		if err != nil {
			t.Fatalf("the task report: %v", err)
		}
		if !strings.Contains(string(report), "## Network") || !strings.Contains(string(report), "refused localhost:"+port) {
			return escaped("the task report does not list the refusal:\n%s", report)
		}
		result := lastToolResult(s)
		t.Logf("command result:\n%s", result)
		if g := got(); g != "" {
			return escaped("reached: %q", g)
		}
		if !strings.Contains(result, "network: refused localhost:"+port) || !strings.Contains(result, "proxy") {
			return escaped("the result does not say what was refused or that the proxy was the network: %q", result)
		}
		return held("refused, and the command's result and the task report name it%s", heldLive(t, got, line))
	})
}

// heldLive runs line with the network allowed and returns the live proof
// for a held verdict (failing the attempt when the line reaches nothing).
func heldLive(t *testing.T, got func() string, line string) string {
	t.Helper()
	withNetwork(t, line)
	return live(t, "the same request with the network allowed", got())
}

// reachedBy runs line with run (the guard off) and returns what the
// listener got.
func reachedBy(t *testing.T, got func() string, run func(*testing.T, string) string, line string) string {
	t.Helper()
	run(t, line)
	return got()
}
