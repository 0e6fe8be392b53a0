package safehttp

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		blocked bool
		reason  string // substring of the reason, when blocked
	}{
		// Public addresses, including neighbours of every blocked IPv4 range.
		{"8.8.8.8", false, ""},
		{"1.1.1.1", false, ""},
		{"93.184.216.34", false, ""},
		{"9.255.255.255", false, ""},
		{"11.0.0.0", false, ""},
		{"100.63.255.255", false, ""},
		{"100.128.0.0", false, ""},
		{"126.255.255.255", false, ""},
		{"128.0.0.0", false, ""},
		{"169.253.255.255", false, ""},
		{"169.255.0.0", false, ""},
		{"172.15.255.255", false, ""},
		{"172.32.0.0", false, ""},
		{"192.0.1.255", false, ""},
		{"192.167.255.255", false, ""},
		{"192.169.0.0", false, ""},
		{"198.17.255.255", false, ""},
		{"198.20.0.0", false, ""},
		{"223.255.255.255", false, ""},
		{"2606:4700:4700::1111", false, ""},
		{"2a00:1450:4001::200e", false, ""},
		{"::ffff:8.8.8.8", false, ""},
		{"64:ff9b::808:808", false, ""},
		{"2002:808:808::1", false, ""},

		// IPv4 reserved ranges.
		{"0.0.0.0", true, "unspecified"},
		{"0.1.2.3", true, "this network"},
		{"10.0.0.1", true, "RFC 1918"},
		{"10.255.255.255", true, "RFC 1918"},
		{"100.64.0.1", true, "RFC 6598"},
		{"100.127.255.255", true, "RFC 6598"},
		{"127.0.0.1", true, "loopback"},
		{"127.255.255.254", true, "loopback"},
		{"169.254.0.1", true, "RFC 3927"},
		{"172.16.0.1", true, "RFC 1918"},
		{"172.31.255.255", true, "RFC 1918"},
		{"192.0.0.8", true, "RFC 6890"},
		{"192.0.2.1", true, "RFC 5737"},
		{"192.88.99.1", true, "RFC 7526"},
		{"192.168.1.1", true, "RFC 1918"},
		{"198.18.0.1", true, "RFC 2544"},
		{"198.19.255.255", true, "RFC 2544"},
		{"198.51.100.7", true, "RFC 5737"},
		{"203.0.113.9", true, "RFC 5737"},
		{"224.0.0.1", true, "multicast"},
		{"239.255.255.250", true, "multicast"},
		{"240.0.0.1", true, "reserved"},
		{"255.255.255.255", true, "broadcast"},

		// Cloud metadata.
		{"169.254.169.254", true, "metadata"},
		{"169.254.170.2", true, "ECS"},
		{"100.100.100.200", true, "Alibaba"},
		{"168.63.129.16", true, "Azure"},
		{"fd00:ec2::254", true, "IMDS"},
		{"fd20:ce::254", true, "GCP"},

		// IPv6 reserved ranges.
		{"::", true, "unspecified"},
		{"::1", true, "loopback"},
		{"::7f00:1", true, "IPv4-compatible"},
		{"fe80::1", true, "link-local"},
		{"fe80::1%eth0", true, "link-local"},
		{"febf:ffff::1", true, "link-local"},
		{"fec0::1", true, "site-local"},
		{"fc00::1", true, "RFC 4193"},
		{"fd12:3456::1", true, "RFC 4193"},
		{"ff02::1", true, "multicast"},
		{"ff05::1:3", true, "multicast"},
		{"2001:db8::1", true, "RFC 3849"},
		{"3fff::1", true, "RFC 9637"},
		{"2001::1", true, "RFC 2928"},
		{"2001:2::1", true, "RFC 2928"},
		{"100::1", true, "RFC 6666"},
		{"64:ff9b:1::1", true, "RFC 8215"},
		{"5f00::1", true, "global unicast"},
		{"4000::1", true, "global unicast"},

		// IPv4 addresses in IPv6 clothing.
		{"::ffff:127.0.0.1", true, "loopback"},
		{"::ffff:10.0.0.1", true, "RFC 1918"},
		{"::ffff:169.254.169.254", true, "metadata"},
		{"::ffff:0.0.0.0", true, "unspecified"},
		{"64:ff9b::7f00:1", true, "NAT64"},
		{"64:ff9b::a9fe:a9fe", true, "metadata"},
		{"64:ff9b::c0a8:101", true, "RFC 1918"},
		{"2002:7f00:1::1", true, "6to4"},
		{"2002:a00:1::", true, "RFC 1918"},
		{"2002:a9fe:a9fe::1", true, "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			err := CheckAddr(netip.MustParseAddr(tt.addr), nil)
			if got := err != nil; got != tt.blocked {
				t.Fatalf("CheckAddr(%s): got blocked=%v (%v), want %v", tt.addr, got, err, tt.blocked)
			}
			if err == nil {
				return
			}
			e := wantKind(t, err, KindBlockedAddress)
			if !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("reason %q, want it to mention %q", e.Reason, tt.reason)
			}
		})
	}
	if err := CheckAddr(netip.Addr{}, nil); err == nil {
		t.Error("CheckAddr(zero Addr): got nil, want blocked")
	}
}

func TestCheckAddrAllowPrivate(t *testing.T) {
	t.Parallel()
	allow, err := ParseCIDRs("127.0.0.0/8, 10.1.0.0/16, fd12::/16, 100.64.0.0/10, 169.254.0.0/16, 0.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1", false},
		{"::ffff:127.0.0.1", false},
		{"64:ff9b::7f00:1", true},
		{"2002:a01:203::1", true},
		{"10.1.2.3", false},
		{"10.2.0.1", true},
		{"192.168.0.1", true},
		{"fd12::1", false},
		{"fd13::1", true},
		{"::1", true},
		{"100.64.0.1", false},
		// Metadata and unspecified addresses stay blocked inside an exception.
		{"100.100.100.200", true},
		{"169.254.169.254", true},
		{"169.254.170.2", true},
		{"169.254.1.1", false},
		{"0.0.0.0", true},
		{"0.1.2.3", false},
		{"64:ff9b::a9fe:a9fe", true},
	}
	for _, tt := range tests {
		err := CheckAddr(netip.MustParseAddr(tt.addr), allow)
		if got := err != nil; got != tt.blocked {
			t.Errorf("CheckAddr(%s, allow): got blocked=%v (%v), want %v", tt.addr, got, err, tt.blocked)
		}
	}
}

// FuzzBlockedAddr checks the classifier against the standard library's own predicates and against
// itself across the IPv6 forms that carry an IPv4 address.
func FuzzBlockedAddr(f *testing.F) {
	for _, s := range []string{
		"8.8.8.8", "127.0.0.1", "10.0.0.1", "169.254.169.254", "0.0.0.0", "255.255.255.255",
		"::1", "::", "fe80::1", "fc00::1", "ff02::1", "2001:db8::1", "2606:4700::1",
		"::ffff:127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::3030:3030", "2002:7f00:1::", "fd00:ec2::254",
	} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		addr, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		blocked := CheckAddr(addr, nil) != nil
		u := addr.Unmap()
		if (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsLinkLocalMulticast() ||
			u.IsInterfaceLocalMulticast() || u.IsMulticast() || u.IsUnspecified()) && !blocked {
			t.Fatalf("%s: the standard library calls it non-public, CheckAddr allows it", addr)
		}
		if u.Is6() && !blocked && !globalUnicast6.Contains(u) && !nat64.Contains(u) {
			t.Fatalf("%s: allowed outside 2000::/3 and the NAT64 prefix", addr)
		}
		if !u.Is4() {
			return
		}
		v4 := u.As4()
		mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
		nat := netip.AddrFrom16([16]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
		six := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: v4[0], 3: v4[1], 4: v4[2], 5: v4[3], 15: 1})
		for _, form := range []netip.Addr{mapped, nat, six} {
			if got := CheckAddr(form, nil) != nil; got != blocked {
				t.Fatalf("%s blocked=%v but its form %s blocked=%v", addr, blocked, form, got)
			}
		}
	})
}
