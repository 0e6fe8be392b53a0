package ops

import (
	"net/http"
	"net/netip"

	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
)

// IsPrivate reports whether a is an address GET /metrics answers (README: "private network"):
// loopback (127.0.0.0/8, ::1), private IPv4 (RFC 1918), unique local IPv6 (fc00::/7, RFC 4193) and
// link-local (169.254.0.0/16, fe80::/10). An IPv4-mapped IPv6 address counts as its IPv4 address.
func IsPrivate(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && (a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast())
}

// ClientAddr is the address of the caller of r and whether every proxy between it and the service
// is on a private network, by api.ForwardedClient's rule; proxyHops is SCORING_TRUSTED_PROXY_HOPS. A
// scraper inside the cluster, which reaches the service through fewer proxies, is the chain's first
// entry. ok is false when the peer or a believed entry does not parse.
func ClientAddr(r *http.Request, proxyHops int) (client netip.Addr, proxiesPrivate, ok bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false, false
	}
	var forwarded []string
	if proxyHops > 0 {
		forwarded = r.Header.Values("X-Forwarded-For")
	}
	client, proxies, ok := api.ForwardedClient(forwarded, peer.Addr(), proxyHops)
	proxiesPrivate = ok
	for _, proxy := range proxies {
		proxiesPrivate = proxiesPrivate && IsPrivate(proxy)
	}
	return client, proxiesPrivate, ok
}

// PrivateOnly serves next to private-network callers and answers 403 to everyone else. A caller
// behind proxies counts only when the proxies, which the service trusts to report it, are private
// too: a request sent straight from the internet with a made-up X-Forwarded-For is refused.
func PrivateOnly(proxyHops int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, proxiesPrivate, ok := ClientAddr(r, proxyHops); !ok || !proxiesPrivate || !IsPrivate(a) {
			api.WriteError(w, r, errNotPrivate)
			return
		}
		next.ServeHTTP(w, r)
	})
}
