package safehttp

import (
	"fmt"
	"net/netip"
)

// metadataAddrs are cloud instance-metadata and host-agent endpoints. They hand out credentials to
// anything that can reach them, so they stay blocked even inside Policy.AllowPrivate: a broad operator
// exception such as 100.64.0.0/10 (Alibaba) or fd00::/8 (AWS IPv6) must not expose them.
var metadataAddrs = map[netip.Addr]string{
	netip.MustParseAddr("169.254.169.254"): "cloud metadata service (AWS, GCP, Azure, OCI, DigitalOcean, OpenStack)",
	netip.MustParseAddr("169.254.170.2"):   "cloud metadata service (AWS ECS task credentials)",
	netip.MustParseAddr("169.254.170.23"):  "cloud metadata service (AWS EKS Pod Identity)",
	netip.MustParseAddr("169.254.0.23"):    "cloud metadata service (Tencent Cloud)",
	netip.MustParseAddr("169.254.42.42"):   "cloud metadata service (Scaleway)",
	netip.MustParseAddr("100.100.100.200"): "cloud metadata service (Alibaba Cloud)",
	netip.MustParseAddr("192.0.0.192"):     "cloud metadata service (Oracle Cloud Classic)",
	// 168.63.129.16 is in public space but answers only inside Azure, as the host agent (WireServer).
	netip.MustParseAddr("168.63.129.16"): "cloud host agent (Azure WireServer)",
	netip.MustParseAddr("fd00:ec2::254"): "cloud metadata service (AWS IMDS over IPv6)",
	netip.MustParseAddr("fd00:ec2::23"):  "cloud metadata service (AWS EKS Pod Identity over IPv6)",
	netip.MustParseAddr("fd20:ce::254"):  "cloud metadata service (GCP over IPv6)",
}

// blockedRange is a range that is not a public, globally reachable unicast destination. The registry is
// RFC 6890 with its updates; each entry names the RFC that reserves it.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedRanges is checked in order, so narrower entries come before the ranges that contain them.
var blockedRanges = []blockedRange{
	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified address (RFC 1122 §3.2.1.3)"},
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network" (RFC 791, RFC 6890)`},
	{netip.MustParsePrefix("10.0.0.0/8"), "private network (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space, CGNAT (RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (RFC 1122 §3.2.1.3)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (RFC 3927)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private network (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (RFC 6890 §2.2.2)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation, TEST-NET-1 (RFC 5737)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast, deprecated (RFC 7526)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private network (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation, TEST-NET-2 (RFC 5737)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation, TEST-NET-3 (RFC 5737)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (RFC 5771)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "limited broadcast (RFC 919)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (RFC 1112 §4)"},

	// IPv6. IPv4-mapped addresses (::ffff:0:0/96, RFC 4291 §2.5.5.2) never get here: they are unmapped
	// and checked as IPv4. NAT64 and 6to4 addresses are checked by their embedded IPv4 address first.
	{netip.MustParsePrefix("::/128"), "unspecified address (RFC 4291 §2.5.2)"},
	{netip.MustParsePrefix("::1/128"), "loopback (RFC 4291 §2.5.3)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible address, deprecated (RFC 4291 §2.5.5.1)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (RFC 8215)"},
	{netip.MustParsePrefix("100::/64"), "discard-only (RFC 6666)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (RFC 3849)"},
	// 2001::/23 holds Teredo (2001::/32, RFC 4380), benchmarking (2001:2::/48, RFC 5180) and ORCHID; no
	// document or webhook server lives there.
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (RFC 2928, RFC 6890)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (RFC 9637)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local address (RFC 4193)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local (RFC 4291 §2.5.6)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local, deprecated (RFC 3879)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast (RFC 4291 §2.7)"},
}

var (
	// globalUnicast6 is the only IPv6 block IANA allocates for global unicast (RFC 4291 §2.4); anything
	// outside it that the table above does not name (100::/8 remnants, 5f00::/16 SRv6, ...) is refused
	// rather than trusted.
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	// nat64 is the well-known NAT64 prefix; the last 32 bits are an IPv4 address (RFC 6052 §2.1).
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour embeds an IPv4 address in bits 16-47 (RFC 3056 §2).
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// CheckAddr returns nil when addr is a public unicast address or lies inside allowPrivate, and an
// *Error of KindBlockedAddress naming the reserved range otherwise. IPv4-mapped IPv6 addresses are
// checked as the IPv4 address they carry; NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are
// refused when the IPv4 address they embed is reserved. Cloud metadata and unspecified addresses, and
// NAT64 and 6to4 forms of reserved addresses, are refused even inside allowPrivate.
func CheckAddr(addr netip.Addr, allowPrivate []netip.Prefix) error {
	if reason, blocked := blockedReason(addr, allowPrivate); blocked {
		return &Error{Kind: KindBlockedAddress, Addr: addr.WithZone(""), Reason: reason}
	}
	return nil
}

// blockedReason reports whether addr is refused and why.
func blockedReason(addr netip.Addr, allow []netip.Prefix) (string, bool) {
	if !addr.IsValid() {
		return "invalid address", true
	}
	// A zone names an interface; it does not change which host the address reaches.
	addr = addr.WithZone("").Unmap()
	if reason, ok := metadataAddrs[addr]; ok {
		return reason, true
	}
	if addr.IsUnspecified() {
		// Connecting to 0.0.0.0 or :: reaches the local host on Linux; no exception can mean that.
		return "unspecified address (RFC 1122 §3.2.1.3, RFC 4291 §2.5.2)", true
	}
	// A NAT64 or 6to4 address reaches the IPv4 address it embeds, through a translator or relay; a
	// reserved one is refused whatever the exceptions say, since those name networks this host reaches
	// directly, not what a translator would reach on its behalf.
	if v4, via := embeddedIPv4(addr); via != "" {
		if reason, blocked := blockedReason(v4, nil); blocked {
			return fmt.Sprintf("%s address embedding %s: %s", via, v4, reason), true
		}
		return "", false
	}
	if allowed(addr, allow) {
		return "", false
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(addr) {
			return r.reason, true
		}
	}
	if addr.Is6() && !globalUnicast6.Contains(addr) {
		return "not IPv6 global unicast (RFC 4291 §2.4)", true
	}
	return "", false
}

// allowed reports whether an operator exception covers addr (already unmapped).
func allowed(addr netip.Addr, allow []netip.Prefix) bool {
	for _, p := range allow {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// embeddedIPv4 returns the IPv4 address carried by a NAT64 or 6to4 address and the mechanism's name.
func embeddedIPv4(addr netip.Addr) (netip.Addr, string) {
	if !addr.Is6() {
		return netip.Addr{}, ""
	}
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64 (RFC 6052)"
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4 (RFC 3056)"
	}
	return netip.Addr{}, ""
}
