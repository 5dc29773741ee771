// Package netproxy is the network of confined programs when the user
// allows a list of domains: an HTTP proxy (CONNECT and plain HTTP) that
// runs in agentls, outside every sandbox, and lets a connection through
// only to a name the allowlist holds, on a port it allows, at an address
// that is public. It resolves the name itself and dials the address it
// checked, so a second answer of the name server (DNS rebinding) cannot
// swap it.
//
// The confined program reaches it through a bridge (Bridge): the
// supervisor, in the program's own network namespace where only lo
// exists, listens on a loopback port and hands every connection to the
// proxy over a unix socket pair it inherited; the program has no other
// route out.
package netproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// DefaultPorts are the ports an allowlist entry without a port allows:
// HTTPS and HTTP.
var DefaultPorts = []int{443, 80}

// Allowlist is the set of names (and ports) the proxy lets through:
// everything else is refused.
type Allowlist struct {
	entries []entry
}

type entry struct {
	name     string // lower case, without a trailing dot
	wildcard bool   // "*.name": every name below name, not name itself
	port     int    // 0: DefaultPorts
}

// label is one DNS label of letters, digits and inner hyphens.
var nameRE = lazyregexp.New(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// ParseAllowlist reads the entries of a commandNetwork list: "example.com"
// (that name, ports 443 and 80), "*.example.com" (every name below it, not
// example.com itself), either with ":PORT" (that port only). IP addresses,
// a bare "*" and wildcards over a top-level domain ("*.com") are refused:
// the list names hosts, and `true` is the setting that allows everything.
func ParseAllowlist(list []string) (Allowlist, error) {
	var a Allowlist
	for i, raw := range list {
		s := strings.TrimSpace(raw)
		var e entry
		if h, p, ok := strings.Cut(s, ":"); ok {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
				return Allowlist{}, fmt.Errorf("entry %d (%q): the port must be a number from 1 to 65535", i, raw)
			}
			s, e.port = h, n
		}
		if rest, ok := strings.CutPrefix(s, "*."); ok {
			e.wildcard, s = true, rest
		}
		name, err := Name(s)
		if err != nil {
			return Allowlist{}, fmt.Errorf("entry %d (%q): %w", i, raw, err)
		}
		if e.wildcard && !strings.Contains(name, ".") {
			return Allowlist{}, fmt.Errorf("entry %d (%q): a wildcard must name a domain below a top-level one (*.example.com)", i, raw)
		}
		e.name = name
		if !slices.Contains(a.entries, e) {
			a.entries = append(a.entries, e)
		}
	}
	return a, nil
}

// Len is the number of entries.
func (a Allowlist) Len() int { return len(a.entries) }

// Allows reports whether the list lets a connection to name (as Name
// returns it) on port through.
func (a Allowlist) Allows(name string, port int) bool {
	for _, e := range a.entries {
		if e.port == 0 && !slices.Contains(DefaultPorts, port) || e.port != 0 && e.port != port {
			continue
		}
		if e.wildcard && strings.HasSuffix(name, "."+e.name) || !e.wildcard && name == e.name {
			return true
		}
	}
	return false
}

// Strings are the entries as the setting writes them.
func (a Allowlist) Strings() []string {
	out := make([]string, 0, len(a.entries))
	for _, e := range a.entries {
		s := e.name
		if e.wildcard {
			s = "*." + s
		}
		if e.port != 0 {
			s += ":" + strconv.Itoa(e.port)
		}
		out = append(out, s)
	}
	return out
}

// Name is host as the proxy matches it: lower case, one trailing dot
// dropped, letters, digits, hyphens and dots only. An IP address (in any
// form a resolver might read as one: a numeric last label) is refused: the
// allowlist names hosts, and an address would skip it.
func Name(host string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" {
		return "", fmt.Errorf("no host name")
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return "", fmt.Errorf("%q is an IP address, not a name", host)
	}
	if len(h) > 253 || !nameRE.MatchString(h) {
		return "", fmt.Errorf("%q is not a host name", host)
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return "", fmt.Errorf("%q reads as an IP address, not a name", host)
	}
	return h, nil
}

// publicV6 is the IPv6 global unicast space; everything outside it is
// refused.
var publicV6 = netip.MustParsePrefix("2000::/3")

// special are the ranges inside the global unicast space that are not
// public hosts: shared address space (CGNAT), "this network", protocol
// assignments, documentation, benchmarking, reserved, and the IPv6
// prefixes that embed an IPv4 address (NAT64, 6to4, Teredo) and could name
// a private one.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001::/23"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("3fff::/20"),
}

// Public reports whether a is an address of a public host: global unicast
// (IPv6: in 2000::/3), not private (RFC 1918, IPv6 ULA fc00::/7), and in
// none of the special ranges. Loopback, link-local, multicast and the
// unspecified address are not global unicast. An IPv4-mapped IPv6
// address is judged as the IPv4 address it maps.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" || !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	if a.Is6() && !publicV6.Contains(a) {
		return false
	}
	for _, p := range special {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
