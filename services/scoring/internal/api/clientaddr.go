package api

import (
	"net/netip"
	"strings"
)

// ForwardedClient reads the caller of a request that came through proxyHops trusted proxies
// (SCORING_TRUSTED_PROXY_HOPS), each appending its peer's address to X-Forwarded-For. The chain is
// the header values' entries followed by peer, when peer is valid (a gateway request's metadata
// already ends with the connection's address). The caller is the entry proxyHops from the chain's
// end, or its first entry when the request came through fewer proxies; entries left of it were
// written by the caller and are neither believed nor parsed. proxies are the entries right of the
// caller. ok is false when the caller's or a proxy's entry does not parse. The sign-in throttle and
// GET /metrics read callers by this one rule.
func ForwardedClient(values []string, peer netip.Addr, proxyHops int) (client netip.Addr, proxies []netip.Addr, ok bool) {
	var entries []string
	for _, v := range values {
		for e := range strings.SplitSeq(v, ",") {
			entries = append(entries, strings.TrimSpace(e))
		}
	}
	if peer.IsValid() {
		entries = append(entries, peer.String())
	}
	if len(entries) == 0 {
		return netip.Addr{}, nil, false
	}
	trusted := entries[max(len(entries)-1-proxyHops, 0):]
	chain := make([]netip.Addr, len(trusted))
	for i, e := range trusted {
		a, err := netip.ParseAddr(e)
		if err != nil {
			return netip.Addr{}, nil, false
		}
		chain[i] = a.Unmap()
	}
	return chain[0], chain[1:], true
}
