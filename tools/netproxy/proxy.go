package netproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
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

// dialTimeout bounds the connection to an allowed address.
const dialTimeout = 30 * time.Second

// Proxy decides and carries the connections of confined programs.
type Proxy struct {
	allow Allowlist
	opts  Options
	serve ServeFunc
}

// ServeFunc proxies one client connection of a confined program through p
// (reading its request, Dial, Note) and closes it; record gets the event.
// Package httpproxy has the one agentls uses: this package stays free of
// net/http, so the programs that run commands but never proxy (agentls
// tool) do not link it.
type ServeFunc func(ctx context.Context, p *Proxy, client net.Conn, record func(Event))

// New is a proxy that lets through what allow allows and nothing else,
// serving each connection with serve (httpproxy.New passes its own).
func New(allow Allowlist, opts Options, serve ServeFunc) *Proxy {
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Dialer == nil {
		opts.Dialer = &net.Dialer{Timeout: dialTimeout}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Proxy{allow: allow, opts: opts, serve: serve}
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

// Dial decides and connects: the one door out. The event says what was
// done, for Note.
func (p *Proxy) Dial(ctx context.Context, host string, port int) (net.Conn, Event) {
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

// Note logs ev and passes it to record (when not nil).
func (p *Proxy) Note(ev Event, record func(Event)) {
	if ev.Reached {
		p.opts.Log.Info("network: reached", "host", ev.Host, "port", ev.Port, "addr", ev.Addr)
	} else {
		p.opts.Log.Warn("network: refused", "host", ev.Host, "port", ev.Port, "reason", ev.Reason)
	}
	if record != nil {
		record(ev)
	}
}
