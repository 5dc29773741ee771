package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Resolver looks up the addresses of a name (*net.Resolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens a connection to an address (*net.Dialer is one).
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Options are what a Proxy uses besides its allowlist. The zero value is
// production: the system resolver, a real dialer, no log. Resolver and
// Dialer exist for tests (a name that resolves to a test address, a dial
// that lands on a local server); no setting reaches them.
type Options struct {
	Resolver Resolver
	Dialer   Dialer
	Log      *slog.Logger
}

// Limits of one proxied connection.
const (
	maxHead     = 64 << 10         // bytes of a request line and headers
	headTimeout = 30 * time.Second // to read them
	dialTimeout = 30 * time.Second
)

// Proxy decides and carries the connections of confined programs.
type Proxy struct {
	allow Allowlist
	opts  Options
}

// New is a proxy that lets through what allow allows and nothing else.
func New(allow Allowlist, opts Options) *Proxy {
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Dialer == nil {
		opts.Dialer = &net.Dialer{Timeout: dialTimeout}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Proxy{allow: allow, opts: opts}
}

// Allowlist is the proxy's allowlist.
func (p *Proxy) Allowlist() Allowlist { return p.allow }

// Event is one connection a confined program asked for, and what the
// proxy did with it.
type Event struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Reached bool   `json:"reached"`
	// Addr is the address dialed (when the name was allowed and resolved).
	Addr string `json:"addr,omitempty"`
	// Reason says why it was refused or could not be reached.
	Reason string `json:"reason,omitempty"`
}

func (e Event) String() string {
	if e.Host == "" {
		return "refused: " + e.Reason
	}
	hp := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	if e.Reached {
		return "reached " + hp
	}
	return "refused " + hp + ": " + e.Reason
}

// ErrRefused marks a connection the policy refuses (as opposed to one that
// was allowed but failed).
var ErrRefused = errors.New("refused")

// Decide is the policy, the one place that says yes: host must be a name
// (not an address) the allowlist allows on port, and every address it
// resolves to must be public. The answer is the address to dial: the one
// checked, never a second lookup.
func (p *Proxy) Decide(ctx context.Context, host string, port int) (netip.AddrPort, error) {
	name, err := Name(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if port < 1 || port > 65535 {
		return netip.AddrPort{}, fmt.Errorf("%w: port %d", ErrRefused, port)
	}
	if !p.allow.Allows(name, port) {
		return netip.AddrPort{}, fmt.Errorf("%w: %s port %d is not in the allowlist", ErrRefused, name, port)
	}
	addrs, err := p.opts.Resolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %s does not resolve: %v", ErrRefused, name, err)
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("%w: %s has no address", ErrRefused, name)
	}
	// Every address must be public: a name that answers with a private
	// one next to a public one is not trusted with either.
	for _, a := range addrs {
		if !Public(a) {
			return netip.AddrPort{}, fmt.Errorf("%w: %s resolves to %s, which is not a public address", ErrRefused, name, a)
		}
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)), nil
}

// dial decides and connects: the one door out.
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, Event) {
	ev := Event{Host: host, Port: port}
	ap, err := p.Decide(ctx, host, port)
	if err != nil {
		ev.Reason = trimRefused(err)
		return nil, ev
	}
	ev.Addr = ap.String()
	c, err := p.opts.Dialer.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		ev.Reason = "allowed, but the connection failed: " + err.Error()
		return nil, ev
	}
	ev.Reached = true
	return c, ev
}

func trimRefused(err error) string {
	s := err.Error()
	if p := ErrRefused.Error() + ": "; len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// Serve proxies one client connection: one CONNECT tunnel, or one plain
// HTTP request (absolute-form, http only), then closes it. record gets
// the event of the request.
func (p *Proxy) Serve(ctx context.Context, client net.Conn, record func(Event)) {
	defer client.Close()
	lr := &io.LimitedReader{R: client, N: maxHead}
	br := bufio.NewReader(lr)
	_ = client.SetReadDeadline(time.Now().Add(headTimeout))
	req, err := http.ReadRequest(br)
	if err != nil {
		writeStatus(client, http.StatusBadRequest, "agentls proxy: bad request")
		return
	}
	_ = client.SetReadDeadline(time.Time{})
	lr.N = math.MaxInt64
	host, port, err := target(req)
	if err != nil {
		ev := Event{Host: req.Host, Reason: err.Error()}
		p.note(ev, record)
		writeStatus(client, http.StatusForbidden, "agentls proxy: "+err.Error())
		return
	}
	up, ev := p.dial(ctx, host, port)
	p.note(ev, record)
	if up == nil {
		code := http.StatusForbidden
		if ev.Addr != "" {
			code = http.StatusBadGateway
		}
		writeStatus(client, code, "agentls proxy: "+ev.Reason)
		return
	}
	defer up.Close()
	// Ending the session cuts the tunnel, whichever side is idle.
	stop := context.AfterFunc(ctx, func() { up.Close(); client.Close() })
	defer stop()
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		splice(client, br, up)
		return
	}
	// Plain HTTP: the request in origin form, one per connection.
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	req.RequestURI = ""
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(client, up)
}

// target is the host and port a request asks for. A CONNECT names
// host:port; a plain request an absolute http URL. Userinfo is refused
// (it has no place in either and hides the host from a reader).
func target(req *http.Request) (string, int, error) {
	if req.URL == nil {
		return "", 0, errors.New("no target")
	}
	if req.URL.User != nil {
		return "", 0, errors.New("a target with user information is refused")
	}
	hostport := req.URL.Host
	defPort := ""
	switch {
	case req.Method == http.MethodConnect:
		if hostport == "" {
			hostport = req.Host
		}
	case req.URL.Scheme == "http":
		defPort = "80"
	default:
		return "", 0, fmt.Errorf("only CONNECT and absolute http:// requests are proxied (got %s %s)", req.Method, req.URL.Scheme)
	}
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort == "" {
			return "", 0, fmt.Errorf("CONNECT needs host:port, got %q", hostport)
		}
		host, ps = hostport, defPort
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != ps {
		return "", 0, fmt.Errorf("bad port %q", ps)
	}
	return host, port, nil
}

func (p *Proxy) note(ev Event, record func(Event)) {
	if ev.Reached {
		p.opts.Log.Info("network: reached", "host", ev.Host, "port", ev.Port, "addr", ev.Addr)
	} else {
		p.opts.Log.Warn("network: refused", "host", ev.Host, "port", ev.Port, "reason", ev.Reason)
	}
	if record != nil {
		record(ev)
	}
}

func writeStatus(w io.Writer, code int, msg string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(msg)+1, msg)
}

// splice copies both ways until either side ends; what the client sent
// after its CONNECT line (buffered in br) goes first.
func splice(client net.Conn, br *bufio.Reader, up net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, br)
		closeWrite(up)
	}()
	_, _ = io.Copy(client, up)
	closeWrite(client)
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
