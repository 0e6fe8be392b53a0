package safehttp

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseCIDRs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr string // substring; "" means success
	}{
		{"", nil, ""},
		{" , ,", nil, ""},
		{"127.0.0.0/8", []string{"127.0.0.0/8"}, ""},
		{"10.20.0.0/16, fd12:3456::/48", []string{"10.20.0.0/16", "fd12:3456::/48"}, ""},
		{"10.0.0.5", []string{"10.0.0.5/32"}, ""},
		{"fd00::5", []string{"fd00::5/128"}, ""},
		{"10.1.2.3/8", []string{"10.0.0.0/8"}, ""},
		{"127.0.0.0/8,", []string{"127.0.0.0/8"}, ""},
		{"10.0.0.0/8, nonsense", nil, `"nonsense"`},
		{"10.0.0.0/33", nil, `"10.0.0.0/33"`},
		{"0.0.0.0/0", nil, "disable"},
		{"::/0", nil, "disable"},
		{"::ffff:10.0.0.0/104", nil, "IPv4-mapped"},
		{"fe80::1%eth0", nil, `"fe80::1%eth0"`},
		{"10.0.0.0/8;192.168.0.0/16", nil, `"10.0.0.0/8;192.168.0.0/16"`},
	}
	for _, tt := range tests {
		got, err := ParseCIDRs(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCIDRs(%q): got error %v, want one naming %s", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCIDRs(%q): got error %v, want nil", tt.in, err)
			continue
		}
		var texts []string
		for _, p := range got {
			texts = append(texts, p.String())
		}
		if !slices.Equal(texts, tt.want) {
			t.Errorf("ParseCIDRs(%q): got %v, want %v", tt.in, texts, tt.want)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	t.Parallel()
	p := Policy{}.withDefaults()
	if p.MaxBytes != 25<<20 || p.Timeout != DefaultTimeout || p.MaxRedirects != 5 || p.MaxAttempts != 3 {
		t.Errorf("zero Policy: got %+v, want 25 MiB, 30s, 5 redirects, 3 attempts", p)
	}
	if p.RequireHTTPS || len(p.AllowPrivate) != 0 || len(p.AllowedHosts) != 0 || len(p.AllowedMIME) != 0 {
		t.Errorf("zero Policy: got %+v, want no exceptions and no lists", p)
	}
	if got := (Policy{MaxRedirects: -1}).withDefaults().MaxRedirects; got != 0 {
		t.Errorf("MaxRedirects -1: got %d, want 0 (none followed)", got)
	}
	if got := (Policy{MaxAttempts: 1}).withDefaults().MaxAttempts; got != 1 {
		t.Errorf("MaxAttempts 1: got %d, want 1", got)
	}

	// The Client keeps its own copy: later edits of the caller's slices do not reach it.
	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	c := New(Policy{AllowPrivate: allow})
	allow[0] = netip.MustParsePrefix("169.254.0.0/16")
	if CheckAddr(netip.MustParseAddr("10.0.0.1"), c.policy.AllowPrivate) != nil {
		t.Error("editing the caller's AllowPrivate changed the Client's policy")
	}
}

func TestHostAllowed(t *testing.T) {
	t.Parallel()
	p := Policy{AllowedHosts: []string{"Docs.Example.com", "*.cdn.example.net", " api.test. ", "203.0.113.5"}}.withDefaults()
	tests := []struct {
		host string
		want bool
	}{
		{"docs.example.com", true},
		{"example.com", false},
		{"evil-docs.example.com", false},
		{"docs.example.com.evil.test", false},
		{"a.cdn.example.net", true},
		{"a.b.cdn.example.net", true},
		{"cdn.example.net", false},
		{"acdn.example.net", false},
		{"api.test", true},
		{"203.0.113.5", true},
		{"203.0.113.6", false},
	}
	for _, tt := range tests {
		if got := p.hostAllowed(tt.host); got != tt.want {
			t.Errorf("hostAllowed(%q): got %v, want %v", tt.host, got, tt.want)
		}
	}
	if !(Policy{}).withDefaults().hostAllowed("anything.test") {
		t.Error("empty AllowedHosts: got refused, want any host allowed")
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	good := Policy{
		AllowedHosts: []string{"example.com", "*.example.net", "203.0.113.5", "::1"},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		AllowedMIME:  []string{"application/pdf", "text/*", "*/*"},
	}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(good): got %v, want nil", err)
	}
	bad := Policy{
		AllowedHosts: []string{"*", "exa mple.com", "*.*.example.com", "http://example.com"},
		AllowPrivate: []netip.Prefix{{}, netip.MustParsePrefix("0.0.0.0/0")},
		AllowedMIME:  []string{"pdf", "*/pdf", "text/html; charset=utf-8"},
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate(bad): got nil, want errors")
	}
	for _, want := range []string{`"*"`, `"exa mple.com"`, `"*.*.example.com"`, `"http://example.com"`,
		"invalid prefix", "disable", `"pdf"`, `"*/pdf"`, `"text/html; charset=utf-8"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(bad): %v\nwant it to mention %s", err, want)
		}
	}
}
