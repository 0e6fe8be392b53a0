package safehttp

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// fakeDNS answers from a table; a name it does not hold fails to resolve.
func fakeDNS(table map[string][]string) LookupFunc {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		raw, ok := table[host]
		if !ok {
			return nil, errors.New("lookup " + host + " on 10.255.255.53:53: no such host")
		}
		var out []netip.Addr
		for _, r := range raw {
			if r == "" {
				out = append(out, netip.Addr{})
				continue
			}
			out = append(out, netip.MustParseAddr(r))
		}
		return out, nil
	}
}

func TestCheckTarget(t *testing.T) {
	dns := fakeDNS(map[string][]string{
		"mcp.example.com":    {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
		"rebind.example.com": {"93.184.216.34", "10.0.0.8"},
		"zero.example.com":   {},
		"bad.example.com":    {""},
		"zoned.example.com":  {"fe80::1%eth0"},
		"lab.example.com":    {"10.20.0.5"},
	})
	policy := TargetPolicy{Lookup: dns}
	cases := []struct {
		url    string
		policy *TargetPolicy
		want   string // "" = accepted
	}{
		{"https://mcp.example.com/mcp", nil, ""},
		{"HTTPS://MCP.EXAMPLE.COM:443/mcp", nil, ""},
		{"https://93.184.216.34/mcp", nil, ""},
		{"", nil, TargetURLRequired},
		{"   ", nil, TargetURLRequired},
		{"mcp.example.com/mcp", nil, TargetURLRequired},
		{"https:///mcp", nil, TargetURLRequired},
		{"https://exa mple.com/", nil, TargetURLRequired},
		{"http://93.184.216.34/mcp", nil, TargetHTTPSRequired},
		{"ftp://93.184.216.34/mcp", nil, TargetHTTPSRequired},
		{"wss://mcp.example.com/mcp", nil, TargetHTTPSRequired},
		{"https://user:pw@93.184.216.34/mcp", nil, TargetCredentialsOrFragment},
		{"https://user@mcp.example.com/mcp", nil, TargetCredentialsOrFragment},
		{"https://93.184.216.34/mcp#frag", nil, TargetCredentialsOrFragment},
		{"https://93.184.216.34/mcp#", nil, TargetCredentialsOrFragment},
		{"https://93.184.216.34:99999/mcp", nil, TargetInvalidPort},
		{"https://93.184.216.34:0/mcp", nil, TargetInvalidPort},
		{"https://93.184.216.34:/mcp", nil, TargetInvalidPort},
		{"https://mcp.example.com:x1/mcp", nil, TargetInvalidPort},
		{"https://93.184.216.34:80/mcp", nil, TargetPortNotAllowed},
		{"https://mcp.example.com:8443/mcp", nil, TargetPortNotAllowed},
		{"https://mcp.example.com:8443/mcp", &TargetPolicy{AllowedPorts: []int{443, 8443}, Lookup: dns}, ""},
		{"https://localhost/mcp", nil, TargetHostBlocked},
		{"https://api.localhost/mcp", nil, TargetHostBlocked},
		{"https://printer.local/mcp", nil, TargetHostBlocked},
		{"https://build.internal/mcp", nil, TargetHostBlocked},
		{"https://vault.internal:443/", nil, TargetHostBlocked},
		{"https://metadata.google.internal/computeMetadata/v1/", nil, TargetHostBlocked},
		{"https://corp/", nil, TargetHostBlocked},
		{"https://router.home.arpa/", nil, TargetHostBlocked},
		{"https://localhost/mcp", &TargetPolicy{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Lookup: dns}, TargetHostBlocked},
		{"https://mcp.no-such-name.example/mcp", nil, TargetDNSFailed},
		{"https://zero.example.com/mcp", nil, TargetDNSFailed},
		{"https://bad.example.com/mcp", nil, TargetInvalidResolvedIP},
		{"https://zoned.example.com/mcp", nil, TargetInvalidResolvedIP},
		{"https://10.0.0.7/mcp", nil, TargetIPBlocked},
		{"https://192.168.1.1/mcp", nil, TargetIPBlocked},
		{"https://127.0.0.1/mcp", nil, TargetIPBlocked},
		{"https://[::1]/mcp", nil, TargetIPBlocked},
		{"https://[fd00::1]/mcp", nil, TargetIPBlocked},
		{"https://[fe80::1]/mcp", nil, TargetIPBlocked},
		{"https://[::ffff:10.0.0.1]/mcp", nil, TargetIPBlocked},
		{"https://0.0.0.0/mcp", nil, TargetIPBlocked},
		{"https://224.0.0.1/mcp", nil, TargetIPBlocked},
		{"https://169.254.169.254/latest/meta-data/", nil, TargetIPBlocked},
		{"https://100.64.0.1/mcp", nil, TargetIPBlocked},
		{"https://rebind.example.com/mcp", nil, TargetIPBlocked},
		{"https://lab.example.com/mcp", nil, TargetIPBlocked},
		{"https://lab.example.com/mcp", &TargetPolicy{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}, Lookup: dns}, ""},
		{"https://169.254.169.254/", &TargetPolicy{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, Lookup: dns}, TargetIPBlocked},
	}
	for _, c := range cases {
		p := policy
		if c.policy != nil {
			p = *c.policy
		}
		got, err := CheckTarget(context.Background(), c.url, p)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: got %v, want accepted", c.url, err)
			} else if got.URL == nil || len(got.Addrs) == 0 {
				t.Errorf("%q: accepted without a URL or addresses: %+v", c.url, got)
			}
			continue
		}
		te, ok := AsTargetError(err)
		if !ok {
			t.Errorf("%q: got %v, want %s", c.url, err, c.want)
			continue
		}
		if te.Code != c.want {
			t.Errorf("%q: got %s (%s), want %s", c.url, te.Code, te.Message, c.want)
		}
		if te.Message == "" {
			t.Errorf("%q: no message", c.url)
		}
	}
}

// The resolver's own error names the resolver's address; a caller must never see it.
func TestCheckTargetHidesTheResolver(t *testing.T) {
	_, err := CheckTarget(context.Background(), "https://mcp.no-such-name.example/mcp", TargetPolicy{Lookup: fakeDNS(nil)})
	te, ok := AsTargetError(err)
	if !ok || te.Code != TargetDNSFailed {
		t.Fatalf("got %v", err)
	}
	if got := te.Error(); strings.Contains(got, "10.255.255.53") || strings.Contains(got, "lookup ") {
		t.Fatalf("message %q leaks the resolver", got)
	}
}

func TestCheckTargetStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lookup := func(ctx context.Context, _ string) ([]netip.Addr, error) { return nil, ctx.Err() }
	_, err := CheckTarget(ctx, "https://mcp.example.com/mcp", TargetPolicy{Lookup: lookup})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// FuzzCheckTarget: any input either passes with a public https URL on port 443 whose addresses are all
// public, or is refused with one of the documented codes; it never panics.
func FuzzCheckTarget(f *testing.F) {
	for _, s := range []string{
		"https://mcp.example.com/mcp", "http://x", "https://u:p@h/", "https://h/#f", "https://h:99999/",
		"https://[::ffff:127.0.0.1]/", "https://0x7f000001/", "https://printer.local/", "", "https://[fe80::1%25eth0]/",
		"https://mcp.example.com:443", "HTTPS://93.184.216.34/",
	} {
		f.Add(s)
	}
	codes := map[string]bool{
		TargetURLRequired: true, TargetHTTPSRequired: true, TargetCredentialsOrFragment: true, TargetInvalidPort: true,
		TargetPortNotAllowed: true, TargetHostBlocked: true, TargetDNSFailed: true, TargetInvalidResolvedIP: true, TargetIPBlocked: true,
	}
	lookup := fakeDNS(map[string][]string{"mcp.example.com": {"93.184.216.34"}})
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := CheckTarget(context.Background(), raw, TargetPolicy{Lookup: lookup})
		if err != nil {
			te, ok := AsTargetError(err)
			if !ok || !codes[te.Code] {
				t.Fatalf("%q: undocumented refusal %v", raw, err)
			}
			return
		}
		if !strings.EqualFold(got.URL.Scheme, "https") || got.URL.User != nil || got.URL.Fragment != "" {
			t.Fatalf("%q: accepted %v", raw, got.URL)
		}
		for _, a := range got.Addrs {
			if CheckAddr(a, nil) != nil {
				t.Fatalf("%q: accepted blocked address %s", raw, a)
			}
		}
	})
}
