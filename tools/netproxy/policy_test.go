package netproxy

import (
	"net/netip"
	"testing"
)

func TestAllowlistMatchesNamesWildcardsAndPorts(t *testing.T) {
	a, err := ParseAllowlist([]string{"proxy.golang.org", "*.npmjs.org", "git.example.com:8443", "Sum.GoLang.org."})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		port int
		want bool
	}{
		{"proxy.golang.org", 443, true},
		{"proxy.golang.org", 80, true},
		{"proxy.golang.org", 22, false},    // a name without a port: 443 and 80 only
		{"sum.golang.org", 443, true},      // entries are matched in lower case, without the trailing dot
		{"registry.npmjs.org", 443, true},  // a wildcard: names below it
		{"a.b.npmjs.org", 443, true},       // at any depth
		{"npmjs.org", 443, false},          // not the domain itself
		{"evilnpmjs.org", 443, false},      // a suffix that is not a label boundary
		{"npmjs.org.evil.com", 443, false}, // the allowed name as a prefix
		{"git.example.com", 8443, true},    // a port given: that port
		{"git.example.com", 443, false},    // and only that one
		{"golang.org", 443, false},         // a parent of an allowed name
		{"xproxy.golang.org", 443, false},  // a sibling
		{"proxy.golang.org.", 443, false},  // Allows takes names as Name returns them
		{"example.org", 443, false},        // not listed
	} {
		if got := a.Allows(c.name, c.port); got != c.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", c.name, c.port, got, c.want)
		}
	}
}

func TestAllowlistRefusesEntriesThatAreNotHostNames(t *testing.T) {
	for _, e := range []string{"*", "*.com", "10.0.0.1", "[::1]", "::1", "example.com:0", "example.com:65536", "example.com:http",
		"user@example.com", "http://example.com", "example.com/path", "exa mple.com", "", "*.*.example.com", "a..b", "2130706433", "0x7f.1"} {
		if _, err := ParseAllowlist([]string{e}); err == nil {
			t.Errorf("ParseAllowlist(%q) accepted it", e)
		}
	}
}

func TestPublicRefusesEveryNonPublicRange(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"93.184.215.14", true},
		{"8.8.8.8", true},
		{"2606:4700:4700::1111", true},
		{"127.0.0.1", false},        // loopback
		{"127.255.0.9", false},      // all of 127/8
		{"10.1.2.3", false},         // RFC 1918
		{"172.16.0.1", false},       //
		{"172.31.255.255", false},   //
		{"192.168.1.1", false},      //
		{"169.254.169.254", false},  // link-local (cloud metadata)
		{"100.64.0.1", false},       // CGNAT
		{"100.127.255.254", false},  //
		{"0.0.0.0", false},          // unspecified
		{"0.1.2.3", false},          // "this network"
		{"224.0.0.1", false},        // multicast
		{"255.255.255.255", false},  // broadcast
		{"240.0.0.1", false},        // reserved
		{"192.0.2.1", false},        // documentation
		{"198.18.0.1", false},       // benchmarking
		{"::1", false},              // IPv6 loopback
		{"::", false},               // IPv6 unspecified
		{"fe80::1", false},          // IPv6 link-local
		{"fc00::1", false},          // IPv6 ULA
		{"fd12:3456::1", false},     //
		{"ff02::1", false},          // IPv6 multicast
		{"::ffff:127.0.0.1", false}, // IPv4-mapped loopback
		{"::ffff:10.0.0.1", false},  // IPv4-mapped private
		{"64:ff9b::a00:1", false},   // NAT64 of 10.0.0.1
		{"2002:a00:1::1", false},    // 6to4 of 10.0.0.1
		{"2001:0:a00:1::1", false},  // Teredo
		{"2001:db8::1", false},      // IPv6 documentation
		{"fec0::1", false},          // site-local, outside 2000::/3
	} {
		if got := Public(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Public(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
}

func TestNameRefusesAddressesAndOddHosts(t *testing.T) {
	for _, h := range []string{"127.0.0.1", "[::1]", "::1", "2130706433", "0x7f000001", "10.0.0.1.", "host name", "user@host", "a_b.example", "", "-a.example", "a.example:443"} {
		if n, err := Name(h); err == nil {
			t.Errorf("Name(%q) = %q, want an error", h, n)
		}
	}
	if n, err := Name("Proxy.GoLang.ORG."); err != nil || n != "proxy.golang.org" {
		t.Errorf("Name(Proxy.GoLang.ORG.) = %q, %v", n, err)
	}
}
