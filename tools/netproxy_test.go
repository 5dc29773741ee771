package tools

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/netproxy"
	"github.com/agentls/agentls/tools/netproxy/httpproxy"
)

// testResolver answers from a fixed map of names to addresses.
type testResolver map[string][]netip.Addr

func (r testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %q", host)
}

// loopbackDialer lands every dial to an address of to on the local test
// server at to's value: the proxy checks and dials a public-looking
// address, the bytes reach a server on this machine's loopback.
type loopbackDialer map[string]string

func (d loopbackDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	target, ok := d[addr]
	if !ok {
		return nil, fmt.Errorf("test dialer: %s is not a test address", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, target)
}

// TestConfinedCommandReachesOnlyAllowedNamesThroughTheProxy runs curl in
// the sandbox with an allowlist proxy: the allowed name is reached (by a
// plain HTTP request and by a CONNECT tunnel), a denied name and a name
// that resolves to loopback are refused by the proxy, and a connection
// that bypasses the proxy (to the test server itself) goes nowhere.
func TestConfinedCommandReachesOnlyAllowedNamesThroughTheProxy(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("this test needs curl on PATH")
	}
	if !namespacesWork() {
		t.Fatal("this test needs the sandbox's namespaces")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer srv.Close()
	public := netip.MustParseAddr("93.184.215.14")
	allow, err := netproxy.ParseAllowlist([]string{"allowed.test", "*.wild.test"})
	if err != nil {
		t.Fatal(err)
	}
	srvAddr := srv.Listener.Addr().String()
	px := httpproxy.New(allow, netproxy.Options{
		Resolver: testResolver{
			"allowed.test": {public}, "a.wild.test": {public}, "denied.test": {public},
			"loop.wild.test": {netip.MustParseAddr("127.0.0.1")},
		},
		Dialer: loopbackDialer{"93.184.215.14:80": srvAddr},
	})
	dir := t.TempDir()
	run := func(args string) (RunResult, string) {
		t.Helper()
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := Run(ctx, RunSpec{
			Argv: []string{"/bin/sh", "-c", curl + " -sS --max-time 30 " + args}, Dir: dir,
			Stdout: &out, Stderr: &errb,
			Sandbox: SandboxOptions{Roots: []string{dir}, Proxy: px},
		})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return res, out.String() + errb.String()
	}
	res, out := run("http://allowed.test/")
	if res.ExitCode != 0 || !strings.Contains(out, "hello from allowed.test") {
		t.Fatalf("plain HTTP to an allowed name: exit %d, %q, notes %q", res.ExitCode, out, res.Notes)
	}
	if !strings.Contains(res.Sandbox, "proxy") || !strings.Contains(strings.Join(res.Notes, "\n"), "network: reached allowed.test:80") {
		t.Errorf("the result does not say what was reached: sandbox %q, notes %q", res.Sandbox, res.Notes)
	}
	if res, out = run("-p http://a.wild.test/"); res.ExitCode != 0 || !strings.Contains(out, "hello from a.wild.test") {
		t.Fatalf("CONNECT to a name below a wildcard: exit %d, %q, notes %q", res.ExitCode, out, res.Notes)
	}
	for _, c := range []struct{ args, note string }{
		{"-f http://denied.test/", "refused denied.test:80: denied.test port 80 is not in the allowlist"},
		{"-p http://denied.test/", "refused denied.test:80"},
		{"-p http://loop.wild.test/", "refused loop.wild.test:80: loop.wild.test resolves to 127.0.0.1"},
		{"-p http://93.184.215.14/", "is an IP address"},
	} {
		res, out := run(c.args)
		if res.ExitCode == 0 || strings.Contains(out, "hello") {
			t.Errorf("%s: reached: exit 0, %q", c.args, out)
		}
		if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, c.note) {
			t.Errorf("%s: notes %q do not say %q", c.args, notes, c.note)
		}
	}
	// Around the proxy: the test server's own address, and no proxy at all.
	res, out = run("--noproxy '*' http://" + srvAddr + "/")
	if res.ExitCode == 0 || strings.Contains(out, "hello") {
		t.Errorf("a direct connection bypassed the proxy: %q", out)
	}
}
