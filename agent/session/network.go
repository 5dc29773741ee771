package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agentls/agentls/tools/netproxy"
	"github.com/agentls/agentls/tools/netproxy/httpproxy"
)

// Network is the commandNetwork setting: what network commands and the
// workspace's sandboxed MCP servers get. JSON false (the default) is none;
// true is every host (the sandbox does not confine the network); a list of
// domains is the allowlist proxy (package netproxy): those names alone, on
// ports 443 and 80 unless an entry names its port, at public addresses
// only. An empty list is the same as false.
type Network struct {
	All   bool
	Allow []string // entries as netproxy.ParseAllowlist reads them, normalised
}

var errNetworkValue = errors.New(`must be true, false or a list of domains such as ["proxy.golang.org", "*.npmjs.org"]`)

// UnmarshalJSON reads true, false or a list of domains.
func (n *Network) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	var all bool
	if err := json.Unmarshal(b, &all); err == nil && string(b) != "null" {
		*n = Network{All: all}
		return nil
	}
	var list []string
	if len(b) == 0 || b[0] != '[' || json.Unmarshal(b, &list) != nil {
		return errNetworkValue
	}
	a, err := netproxy.ParseAllowlist(list)
	if err != nil {
		return err
	}
	*n = Network{Allow: a.Strings()}
	return nil
}

// MarshalJSON writes the list, or true or false.
func (n Network) MarshalJSON() ([]byte, error) {
	if !n.All && len(n.Allow) > 0 {
		return json.Marshal(n.Allow)
	}
	return json.Marshal(n.All)
}

// String is the value as the user wrote it.
func (n Network) String() string {
	b, _ := n.MarshalJSON()
	return string(b)
}

// Proxy is the allowlist proxy of the setting, logging what it lets
// through and refuses to log; nil unless the setting is a list.
func (n Network) Proxy(log *slog.Logger) *netproxy.Proxy {
	if n.All || len(n.Allow) == 0 {
		return nil
	}
	a, err := netproxy.ParseAllowlist(n.Allow)
	if err != nil { // checked when the setting was read
		return nil
	}
	return httpproxy.New(a, netproxy.Options{Log: log})
}

// widenings are what n allows that base does not: true over anything but
// true, each entry of a list that base's list does not hold.
func (n Network) widenings(base Network) []string {
	if base.All {
		return nil
	}
	if n.All {
		return []string{"commandNetwork true"}
	}
	var out []string
	for _, e := range n.Allow {
		if !slices.Contains(base.Allow, e) {
			out = append(out, fmt.Sprintf("commandNetwork %q", e))
		}
	}
	return out
}

// narrowed is n without what base does not allow.
func (n Network) narrowed(base Network) Network {
	if base.All {
		return n
	}
	if n.All {
		return base
	}
	n.Allow = slices.DeleteFunc(slices.Clone(n.Allow), func(e string) bool { return !slices.Contains(base.Allow, e) })
	return n
}
