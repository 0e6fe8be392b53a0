package safehttp

import (
	"net/netip"
	"strings"
)

// metadataNames are DNS names of cloud metadata services. Their addresses are blocked anyway; naming
// them lets CheckURL refuse a registration without a lookup.
var metadataNames = map[string]bool{
	"metadata.google.internal":   true,
	"metadata.goog":              true,
	"metadata.tencentyun.com":    true,
	"instance-data.ec2.internal": true,
}

// loopbackAddrs are what "localhost" names resolve to (RFC 6761 §6.3).
var loopbackAddrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}

// ValidateHost returns nil when host is a DNS hostname or an IP literal as CheckURL accepts them, and an
// *Error of KindBadURL otherwise. It checks syntax only, not addresses or a policy. host is bare, as
// url.URL.Hostname returns it: no port, no IPv6 brackets.
//
// A hostname is dot-separated labels of 1-63 letters, digits and hyphens (RFC 1123 §2.1), at most 253
// characters, optionally with one trailing dot, whose last label begins with a letter. That last rule
// (RFC 3696 §2: a top-level domain is not all-numeric) refuses the numeric forms that inet_aton and
// getaddrinfo read as addresses: "2130706433", "0x7f000001", "127.1", "0177.0.0.1". Non-ASCII names
// must be given in their xn-- (IDNA) form. IP literals are IPv4 dotted decimal without leading zeros, or
// IPv6 without a zone.
func ValidateHost(host string) error {
	_, _, err := parseHost(host)
	return err
}

// parseHost validates host and returns its normal form (lower case, no trailing dot, canonical address
// text) and, for an IP literal, the address.
func parseHost(host string) (string, netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return "", netip.Addr{}, badURL("IPv6 zone in host")
		}
		return addr.String(), addr, nil
	}
	if strings.Contains(host, ":") {
		return "", netip.Addr{}, badURL("host is not a valid IP literal")
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !validHostname(name) {
		return "", netip.Addr{}, badURL("host is not a valid hostname or canonical IP literal")
	}
	return name, netip.Addr{}, nil
}

// validHostname applies the rules ValidateHost documents to a lower-case name without trailing dot.
func validHostname(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	last := ""
	for label := range strings.SplitSeq(name, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
		last = label
	}
	return last[0] >= 'a' && last[0] <= 'z'
}

// isLocalhostName reports names that resolve to loopback by definition (RFC 6761 §6.3).
func isLocalhostName(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

func badURL(reason string) *Error { return &Error{Kind: KindBadURL, Reason: reason} }
