package safehttp

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestValidateHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host string
		ok   bool
	}{
		{"example.com", true},
		{"EXAMPLE.com", true},
		{"example.com.", true},
		{"a-b.example.co.uk", true},
		{"xn--bcher-kva.example", true},
		{"intranet", true},
		{"1.2.3.4.nip.io", true},
		{"8.8.8.8", true},
		{"::1", true},
		{"2001:db8::1", true},
		{"::ffff:127.0.0.1", true},

		{"", false},
		{".", false},
		{"example..com", false},
		{".example.com", false},
		{"-example.com", false},
		{"example-.com", false},
		{"exa_mple.com", false},
		{"exa mple.com", false},
		{"bücher.example", false},
		{strings.Repeat("a", 64) + ".com", false},
		{strings.Repeat("a.", 127) + "com", false},
		// Numeric forms inet_aton accepts: decimal, hex, octal, shortened.
		{"2130706433", false},
		{"0x7f000001", false},
		{"0x7f.0.0.1", false},
		{"0177.0.0.1", false},
		{"017700000001", false},
		{"127.1", false},
		{"127.0.1", false},
		{"127.0.0.1.", false},
		{"010.0.0.1", false},
		{"1.2.3.256", false},
		{"fe80::1%eth0", false},
		{"[::1]", false},
		{"::g", false},
	}
	for _, tt := range tests {
		err := ValidateHost(tt.host)
		if got := err == nil; got != tt.ok {
			t.Errorf("ValidateHost(%q): got %v, want ok=%v", tt.host, err, tt.ok)
		}
		if err != nil {
			wantKind(t, err, KindBadURL)
		}
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	open := New(Policy{})
	strict := New(Policy{RequireHTTPS: true, AllowedHosts: []string{"docs.example.com", "*.hooks.example.net"}})
	onPrem := New(Policy{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	tests := []struct {
		name string
		c    *Client
		url  string
		want Kind // KindUnknown: accepted
	}{
		{"https", open, "https://example.com/policy.pdf", KindUnknown},
		{"http allowed", open, "http://example.com:8080/a?b=c#d", KindUnknown},
		{"upper-case scheme and host", open, "HTTPS://EXAMPLE.COM/", KindUnknown},
		{"public IP literal", open, "https://8.8.8.8/", KindUnknown},
		{"public IPv6 literal", open, "https://[2606:4700:4700::1111]/", KindUnknown},
		{"absolute name", open, "https://example.com./", KindUnknown},

		{"empty", open, "", KindBadURL},
		{"relative", open, "/just/a/path", KindBadURL},
		{"no host", open, "https:///path", KindBadURL},
		{"opaque", open, "https:example.com", KindBadURL},
		{"ftp", open, "ftp://example.com/", KindBadURL},
		{"file", open, "file:///etc/passwd", KindBadURL},
		{"gopher", open, "gopher://127.0.0.1:6379/_FLUSHALL", KindBadURL},
		{"javascript", open, "javascript:alert(1)", KindBadURL},
		{"credentials", open, "https://user:pass@example.com/", KindBadURL},
		{"allowlisted name as user", strict, "https://docs.example.com@evil.test/", KindBadURL},
		{"port zero", open, "https://example.com:0/", KindBadURL},
		{"port too big", open, "https://example.com:65536/", KindBadURL},
		{"malformed", open, "https://exa mple.com/", KindBadURL},
		{"decimal IPv4", open, "http://2130706433/", KindBadURL},
		{"hex IPv4", open, "http://0x7f000001/", KindBadURL},
		{"octal IPv4", open, "http://0177.0.0.1/", KindBadURL},
		{"short IPv4", open, "http://127.1/", KindBadURL},
		{"leading-zero IPv4", open, "http://010.0.0.1/", KindBadURL},
		{"bracketed IPv4", open, "http://[127.0.0.1]/", KindBadURL},
		{"IPv6 zone", open, "http://[fe80::1%25eth0]/", KindBadURL},
		{"underscore", open, "http://a_b.example.com/", KindBadURL},
		{"http when https required", strict, "http://docs.example.com/", KindBadURL},

		{"loopback literal", open, "http://127.0.0.1:8080/", KindBlockedAddress},
		{"percent-encoded host", open, "http://%31%32%37.0.0.1/", KindBadURL},
		{"private literal", open, "https://10.1.2.3/", KindBlockedAddress},
		{"metadata literal", open, "http://169.254.169.254/latest/meta-data/", KindBlockedAddress},
		{"metadata name", open, "http://metadata.google.internal/computeMetadata/v1/", KindBlockedAddress},
		{"IPv6 loopback", open, "http://[::1]/", KindBlockedAddress},
		{"IPv6 loopback, long form", open, "http://[0:0:0:0:0:0:0:1]/", KindBlockedAddress},
		{"mapped loopback", open, "http://[::ffff:127.0.0.1]/", KindBlockedAddress},
		{"mapped loopback, hex", open, "http://[::ffff:7f00:1]/", KindBlockedAddress},
		{"NAT64 metadata", open, "http://[64:ff9b::a9fe:a9fe]/", KindBlockedAddress},
		{"ULA", open, "http://[fd00::1]/", KindBlockedAddress},
		{"localhost", open, "http://localhost:8080/", KindBlockedAddress},
		{"sub.localhost", open, "http://api.localhost/", KindBlockedAddress},
		{"unspecified", open, "http://0.0.0.0:8080/", KindBlockedAddress},

		{"allowlisted", strict, "https://docs.example.com/p.pdf", KindUnknown},
		{"allowlisted, case and dot", strict, "https://DOCS.example.com./p.pdf", KindUnknown},
		{"wildcard", strict, "https://a.hooks.example.net/x", KindUnknown},
		{"wildcard apex", strict, "https://hooks.example.net/x", KindHostNotAllowed},
		{"off list", strict, "https://evil.test/", KindHostNotAllowed},
		{"suffix trick", strict, "https://docs.example.com.evil.test/", KindHostNotAllowed},

		{"on-prem exception", onPrem, "http://10.9.8.7/", KindUnknown},
		{"on-prem localhost", onPrem, "http://localhost:8080/", KindUnknown},
		{"on-prem other private", onPrem, "http://192.168.1.1/", KindBlockedAddress},
		{"on-prem metadata", onPrem, "http://169.254.169.254/", KindBlockedAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.c.CheckURL(tt.url)
			if tt.want == KindUnknown {
				if err != nil {
					t.Fatalf("CheckURL(%q): got %v, want nil", tt.url, err)
				}
				return
			}
			wantKind(t, err, tt.want)
		})
	}
}

// FuzzCheckURL: CheckURL never panics, and whatever it accepts has an allowed scheme, no credentials
// and a host that is a valid name or an IP literal outside the blocked ranges.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/", "http://example.com:8080/a?b#c", "https://[2606:4700::1]:443/",
		"http://127.0.0.1/", "http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/",
		"http://127.1/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[fe80::1%25en0]/",
		"http://user:pass@example.com/", "https://example.com@127.0.0.1/", "http://%31%32%37.0.0.1/",
		"http://localhost/", "http://169.254.169.254/latest/", "http://[64:ff9b::a9fe:a9fe]/",
		"http://[2002:7f00:1::]/", "gopher://127.0.0.1:6379/_x", "file:///etc/passwd", "https:example.com",
		"http://example.com:0/", "http://example.com:99999/", "http://exa%00mple.com/", "http://[::]/",
		"HTTP://EXAMPLE.COM./", "http://0.0.0.0/", "//example.com/", "http://\u00e9xample.com/",
	} {
		f.Add(s)
	}
	c := New(Policy{})
	f.Fuzz(func(t *testing.T, raw string) {
		if c.CheckURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which url.Parse refuses: %v", raw, err)
		}
		if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
			t.Fatalf("accepted %q with scheme %q", raw, u.Scheme)
		}
		if u.User != nil {
			t.Fatalf("accepted %q with credentials", raw)
		}
		host := u.Hostname()
		if err := ValidateHost(host); err != nil {
			t.Fatalf("accepted %q whose host %q is invalid: %v", raw, host, err)
		}
		if addr, err := netip.ParseAddr(host); err == nil {
			if err := CheckAddr(addr, nil); err != nil {
				t.Fatalf("accepted %q whose host is blocked: %v", raw, err)
			}
		}
	})
}
