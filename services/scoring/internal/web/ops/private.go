package ops

import (
	"net/http"
	"net/netip"
	"strings"
)

// IsPrivate reports whether a is an address GET /metrics answers (Document 2: "private network"):
// loopback (127.0.0.0/8, ::1), private IPv4 (RFC 1918), unique local IPv6 (fc00::/7, RFC 4193) and
// link-local (169.254.0.0/16, fe80::/10). An IPv4-mapped IPv6 address counts as its IPv4 address.
func IsPrivate(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && (a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast())
}

// ClientAddr is the address of the caller of r and whether every proxy between it and the service
// is on a private network. proxyHops is SCORING_TRUSTED_PROXY_HOPS, the number of proxies in front of
// the service that append their peer's address to X-Forwarded-For (the control plane's sign-in
// throttle reads the same setting). The chain is the header's entries followed by the connection's
// peer; the caller is the entry proxyHops from its end (or the first, when the request came through
// fewer proxies, as a scraper inside the cluster does). Entries left of the caller were written by
// the caller and are never believed. ok is false when an entry does not parse.
func ClientAddr(r *http.Request, proxyHops int) (client netip.Addr, proxiesPrivate, ok bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false, false
	}
	chain := []netip.Addr{peer.Addr().Unmap()}
	if proxyHops > 0 {
		var hops []netip.Addr
		for _, header := range r.Header.Values("X-Forwarded-For") {
			for entry := range strings.SplitSeq(header, ",") {
				a, err := netip.ParseAddr(strings.TrimSpace(entry))
				if err != nil {
					return netip.Addr{}, false, false
				}
				hops = append(hops, a.Unmap())
			}
		}
		chain = append(hops, chain...)
	}
	i := max(len(chain)-1-proxyHops, 0)
	proxiesPrivate = true
	for _, proxy := range chain[i+1:] {
		proxiesPrivate = proxiesPrivate && IsPrivate(proxy)
	}
	return chain[i], proxiesPrivate, true
}

// PrivateOnly serves next to private-network callers and answers 403 to everyone else. A caller
// behind proxies counts only when the proxies, which the service trusts to report it, are private
// too: a request sent straight from the internet with a made-up X-Forwarded-For is refused.
func PrivateOnly(proxyHops int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, proxiesPrivate, ok := ClientAddr(r, proxyHops); !ok || !proxiesPrivate || !IsPrivate(a) {
			writeError(w, errNotPrivate)
			return
		}
		next.ServeHTTP(w, r)
	})
}
