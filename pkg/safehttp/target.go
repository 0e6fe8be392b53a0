package safehttp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Target refusal codes: the stable codes an API answers when it will not audit or watch a URL. They
// are ordered as CheckTarget applies them, from the URL's shape to the addresses its host resolves to.
const (
	TargetURLRequired           = "remote_url_required"                 // empty, or not an absolute URL with a host
	TargetHTTPSRequired         = "public_https_url_required"           // a scheme other than https
	TargetCredentialsOrFragment = "url_credentials_or_fragment_blocked" // user:password@ or #fragment
	TargetInvalidPort           = "invalid_port"                        // not a number in 1..65535
	TargetPortNotAllowed        = "https_port_required"                 // a valid port that is not allowed
	TargetHostBlocked           = "ssrf_host_blocked"                   // a name that only reaches private networks
	TargetDNSFailed             = "dns_resolution_failed"               // the name did not resolve
	TargetInvalidResolvedIP     = "invalid_resolved_ip"                 // the resolver answered something that is not a usable address
	TargetIPBlocked             = "ssrf_ip_blocked"                     // the host is, or resolves to, a blocked address
)

// DefaultTargetPorts are the ports a target may name when TargetPolicy.AllowedPorts is empty.
var DefaultTargetPorts = []int{443}

// TargetPolicy says which remote endpoints (MCP servers) may be audited: public https URLs on an
// allowed port, whose every address is public. It is stricter than Policy, which also serves
// operators' own sources: a target is anybody's URL, given by an API caller.
type TargetPolicy struct {
	// AllowedPorts lists the ports a URL may name; empty means DefaultTargetPorts. A URL without a
	// port means 443.
	AllowedPorts []int
	// AllowPrivate lists reserved ranges opened by the operator (tests reach loopback servers so);
	// names such as localhost and *.internal are refused whatever it says.
	AllowPrivate []netip.Prefix
	// Lookup resolves host names; nil uses the system resolver.
	Lookup LookupFunc
}

// TargetError is a refused target: Code is one of the Target* constants, Message says what is wrong in
// words a caller can act on. It never holds a resolver's own error text, which names internal
// addresses.
type TargetError struct {
	Code    string
	Message string
}

func (e *TargetError) Error() string { return e.Code + ": " + e.Message }

// AsTargetError returns the *TargetError in err's chain.
func AsTargetError(err error) (*TargetError, bool) {
	var t *TargetError
	ok := errors.As(err, &t)
	return t, ok
}

// Target is a URL that passed CheckTarget, with the addresses its host resolved to then. A Client
// checks the addresses again at connect time, since DNS may answer differently by then.
type Target struct {
	URL   *url.URL
	Addrs []netip.Addr
}

// CheckTarget validates raw as an audit target and resolves its host; the error is a *TargetError
// unless ctx ended first (then ctx's error).
func CheckTarget(ctx context.Context, raw string, p TargetPolicy) (Target, error) {
	u, host, err := parseTarget(raw, p)
	if err != nil {
		return Target{}, err
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(addr, p.AllowPrivate); err != nil {
			return Target{}, refuse(TargetIPBlocked, "the target address %s is not public: %s", addr, reasonOf(err))
		}
		return Target{URL: u, Addrs: []netip.Addr{addr.Unmap()}}, nil
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = defaultLookup
	}
	addrs, err := lookup(ctx, host)
	if ctx.Err() != nil {
		return Target{}, ctx.Err()
	}
	if err != nil || len(addrs) == 0 {
		return Target{}, refuse(TargetDNSFailed, "the host %s did not resolve to any address", host)
	}
	for _, a := range addrs {
		if !a.IsValid() || a.Zone() != "" {
			return Target{}, refuse(TargetInvalidResolvedIP, "the host %s resolved to an address that cannot be used", host)
		}
	}
	for _, a := range addrs {
		// Every address must pass: a client may connect to any of them, and an attacker who controls
		// the zone chooses which.
		if err := CheckAddr(a, p.AllowPrivate); err != nil {
			return Target{}, refuse(TargetIPBlocked, "the host %s resolves to %s, which is not public: %s", host, a.Unmap(), reasonOf(err))
		}
	}
	return Target{URL: u, Addrs: addrs}, nil
}

// parseTarget applies the checks that need no lookup and returns the URL and its normalised host.
func parseTarget(raw string, p TargetPolicy) (*url.URL, string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, "", refuse(TargetURLRequired, "a target url is required")
	}
	u, err := url.Parse(raw)
	if err != nil && strings.Contains(err.Error(), "invalid port") {
		return nil, "", refuse(TargetInvalidPort, "the port must be a number from 1 to 65535")
	}
	if err != nil || u.Scheme == "" || u.Opaque != "" || u.Host == "" && u.User == nil {
		return nil, "", refuse(TargetURLRequired, "the target must be an absolute URL such as https://mcp.example.com/mcp")
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return nil, "", refuse(TargetHTTPSRequired, "the target must be a public https URL")
	}
	if u.User != nil || u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, "", refuse(TargetCredentialsOrFragment, "the target URL may carry neither credentials nor a fragment; send credentials as headers")
	}
	port := 443
	if s := u.Port(); s != "" || strings.HasSuffix(u.Host, ":") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 {
			return nil, "", refuse(TargetInvalidPort, "the port must be a number from 1 to 65535")
		}
		port = n
	}
	allowedPorts := p.AllowedPorts
	if len(allowedPorts) == 0 {
		allowedPorts = DefaultTargetPorts
	}
	if !slices.Contains(allowedPorts, port) {
		return nil, "", refuse(TargetPortNotAllowed, "https targets must use port %s", portList(allowedPorts))
	}
	host, addr, err := parseHost(u.Hostname())
	if err != nil {
		return nil, "", refuse(TargetURLRequired, "the target host is not a valid hostname or IP address")
	}
	if strings.HasPrefix(u.Host, "[") != (addr.IsValid() && addr.Is6()) {
		return nil, "", refuse(TargetURLRequired, "the target host is not a valid hostname or IP address")
	}
	if !addr.IsValid() && privateName(host) {
		return nil, "", refuse(TargetHostBlocked, "the host %s names a local or internal network, not a public server", host)
	}
	return u, host, nil
}

// privateName reports whether a (normalised) host name can only reach private networks: localhost
// (RFC 6761 §6.3), multicast DNS (.local, RFC 6762), the names RFC 6762 Appendix G and ICANN reserve
// for private use (.internal, .intranet, .lan, .home.arpa, .corp), cloud metadata names, and
// single-label names, which a resolver completes with its own search domains.
func privateName(host string) bool {
	if metadataNames[host] || isLocalhostName(host) || !strings.Contains(host, ".") {
		return true
	}
	for _, suffix := range []string{".local", ".internal", ".intranet", ".lan", ".home.arpa", ".corp", ".localdomain"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

func refuse(code, format string, args ...any) *TargetError {
	return &TargetError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// reasonOf is the reason CheckAddr gave, without the address it repeats.
func reasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return "blocked range"
}

func portList(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// CheckHostPort applies CheckTarget's rules that need no DNS to u's host and port: a name that only
// reaches private networks is refused (TargetHostBlocked), as is an IP literal outside the public
// internet and allowPrivate (TargetIPBlocked), and a port not in ports (empty means DefaultTargetPorts;
// no port means 443) is refused with TargetPortNotAllowed, except on an IP literal inside allowPrivate,
// where the operator's own receivers may listen on any port. It checks neither the scheme nor
// credentials; registrations use it on top of their own URL rules.
func CheckHostPort(u *url.URL, ports []int, allowPrivate []netip.Prefix) *TargetError {
	if u == nil || u.Host == "" {
		return refuse(TargetURLRequired, "the URL must be absolute, with a host")
	}
	host, addr, err := parseHost(u.Hostname())
	if err != nil {
		return refuse(TargetURLRequired, "the host is not a valid hostname or IP address")
	}
	if addr.IsValid() {
		if err := CheckAddr(addr, allowPrivate); err != nil {
			return refuse(TargetIPBlocked, "the address %s is not public: %s", addr.Unmap(), reasonOf(err))
		}
	} else if privateName(host) {
		return refuse(TargetHostBlocked, "the host %s names a local or internal network, not a public server", host)
	}
	port := 443
	if s := u.Port(); s != "" || strings.HasSuffix(u.Host, ":") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 {
			return refuse(TargetInvalidPort, "the port must be a number from 1 to 65535")
		}
		port = n
	}
	if len(ports) == 0 {
		ports = DefaultTargetPorts
	}
	if !slices.Contains(ports, port) && !(addr.IsValid() && inPrefixes(addr.Unmap(), allowPrivate)) {
		return refuse(TargetPortNotAllowed, "the URL must use port %s", portList(ports))
	}
	return nil
}

func inPrefixes(addr netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
