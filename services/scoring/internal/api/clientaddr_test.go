package api

import (
	"net/netip"
	"testing"
)

func TestForwardedClient(t *testing.T) {
	t.Parallel()
	peer := netip.MustParseAddr("10.0.0.9")
	for _, tc := range []struct {
		name    string
		values  []string
		peer    netip.Addr
		hops    int
		client  string // "" when ok is false
		proxies int
	}{
		{"no proxies: the peer", nil, peer, 0, "10.0.0.9", 0},
		{"no proxies: a made-up header is not believed", []string{"8.8.8.8"}, peer, 0, "10.0.0.9", 0},
		{"one proxy", []string{"203.0.113.7"}, peer, 1, "203.0.113.7", 1},
		{"one proxy, caller-written entries left of it ignored", []string{"garbage, 1.2.3.4, 203.0.113.7"}, peer, 1, "203.0.113.7", 1},
		{"two proxies over two header values", []string{"198.51.100.1, 203.0.113.7", "10.1.1.1"}, peer, 2, "203.0.113.7", 2},
		{"fewer proxies than trusted: the first entry", []string{"203.0.113.7"}, peer, 5, "203.0.113.7", 1},
		{"gateway metadata: no separate peer", []string{"203.0.113.7, 127.0.0.1"}, netip.Addr{}, 1, "203.0.113.7", 1},
		{"IPv4-mapped IPv6 unmapped", []string{"::ffff:203.0.113.7"}, peer, 1, "203.0.113.7", 1},
		{"a believed entry that does not parse", []string{"not-an-ip"}, peer, 1, "", 0},
		{"nothing at all", nil, netip.Addr{}, 1, "", 0},
	} {
		client, proxies, ok := ForwardedClient(tc.values, tc.peer, tc.hops)
		if tc.client == "" {
			if ok {
				t.Errorf("%s: got %s ok, want not ok", tc.name, client)
			}
			continue
		}
		if !ok || client.String() != tc.client || len(proxies) != tc.proxies {
			t.Errorf("%s: got %s, %d proxies, ok %v; want %s, %d proxies", tc.name, client, len(proxies), ok, tc.client, tc.proxies)
		}
	}
}
