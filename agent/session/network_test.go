package session

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentls/agentls/tools"
)

func TestCommandNetworkTakesTrueFalseOrAListOfDomains(t *testing.T) {
	for _, c := range []struct {
		raw     string
		want    Network
		problem string // in the problem, "" for none
	}{
		{`{"commandNetwork": false}`, Network{}, ""},
		{`{"commandNetwork": true}`, Network{All: true}, ""},
		{`{"commandNetwork": []}`, Network{}, ""},
		{`{"commandNetwork": ["proxy.golang.org", "*.NPMJS.org", "git.example.com:8443"]}`, Network{Allow: []string{"proxy.golang.org", "*.npmjs.org", "git.example.com:8443"}}, ""},
		{`{"commandNetwork": ["10.0.0.1"]}`, Network{}, "IP address"},
		{`{"commandNetwork": ["*"]}`, Network{}, "not a host name"},
		{`{"commandNetwork": "yes"}`, Network{}, "must be true, false or a list of domains"},
		{`{"commandNetwork": [1]}`, Network{}, "must be true, false or a list of domains"},
	} {
		got, problems := Defaults().Apply([]byte(c.raw))
		if c.problem == "" && len(problems) > 0 || c.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0].String(), c.problem)) {
			t.Errorf("%s: problems %v, want %q", c.raw, problems, c.problem)
		}
		if got.CommandNetwork.All != c.want.All || !slices.Equal(got.CommandNetwork.Allow, c.want.Allow) {
			t.Errorf("%s: %+v, want %+v", c.raw, got.CommandNetwork, c.want)
		}
		if (got.CommandNetwork.Proxy(nil) != nil) != (len(c.want.Allow) > 0) {
			t.Errorf("%s: a proxy is made exactly for a list", c.raw)
		}
	}
}

// TestCommandNetworkWideningsAreNamed: a later value (the workspace's, the
// client's) that allows a host the user's did not is a widening, named by
// entry, and is set back when refused.
func TestCommandNetworkWideningsAreNamed(t *testing.T) {
	list := func(e ...string) Network { return Network{Allow: e} }
	for _, c := range []struct {
		base, s Network
		want    []string
		kept    Network
	}{
		{Network{}, Network{All: true}, []string{"commandNetwork true"}, Network{}},
		{list("a.example"), Network{All: true}, []string{"commandNetwork true"}, list("a.example")},
		{Network{}, list("a.example"), []string{`commandNetwork "a.example"`}, Network{}},
		{list("a.example"), list("a.example", "*.b.example"), []string{`commandNetwork "*.b.example"`}, list("a.example")},
		{list("a.example", "b.example"), list("b.example"), nil, list("b.example")},
		{list("a.example"), Network{}, nil, Network{}},
		{Network{All: true}, list("c.example"), nil, list("c.example")},
	} {
		if got := c.s.widenings(c.base); !slices.Equal(got, c.want) {
			t.Errorf("%v over %v: widenings %q, want %q", c.s, c.base, got, c.want)
		}
		if got := c.s.narrowed(c.base); got.All != c.kept.All || !slices.Equal(got.Allow, c.kept.Allow) {
			t.Errorf("%v over %v: narrowed to %v, want %v", c.s, c.base, got, c.kept)
		}
	}
}

// TestClientListWideningAsksAndIsSetBack: a value that arrives after start
// and adds a domain to the user's list asks, names the domain, and without
// a yes the user's list applies.
func TestClientListWideningAsksAndIsSetBack(t *testing.T) {
	start := Defaults()
	start.CommandNetwork = Network{Allow: []string{"proxy.golang.org"}}
	h := New(start, Options{Getenv: func(string) string { return "" }})
	wider := start
	wider.CommandNetwork = Network{Allow: []string{"proxy.golang.org", "evil.example"}}
	port := &askPort{answer: tools.Deny}
	got, err := h.confirmSettings(context.Background(), wider, "p", port)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.CommandNetwork.Allow, []string{"proxy.golang.org"}) || got.CommandNetwork.All {
		t.Errorf("denied: %v, want the user's list", got.CommandNetwork)
	}
	if q := port.asked(); len(q) != 1 || !strings.Contains(q[0].Title, `commandNetwork "evil.example"`) {
		t.Errorf("questions %+v; want one naming the new domain", q)
	}
}
