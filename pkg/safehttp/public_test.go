package safehttp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestPublicErrorHidesDetail(t *testing.T) {
	dnsErr := &Error{Kind: KindDNS, Host: "x.internal", Err: &net.DNSError{Err: "no such host", Name: "x.internal", Server: "10.255.255.53:53"}}
	blocked := &Error{Kind: KindBlockedAddress, Host: "hooks.example.com", Addr: netip.MustParseAddr("10.1.2.3"), Reason: "private network (RFC 1918)"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{dnsErr, "dns_resolution_failed: the host name did not resolve"},
		{blocked, "ssrf_ip_blocked: the host is, or resolves to, an address that is not allowed"},
		{&Error{Kind: KindStatus, Status: 503}, "status: the endpoint answered HTTP 503"},
		{&Error{Kind: KindNetwork, Err: errors.New("dial tcp 10.1.2.3:443: connect: connection refused")}, "network: the connection failed or was closed early"},
		{errors.New("dial tcp 10.1.2.3:443"), "unknown: the request failed"},
		{nil, ""},
	} {
		got := PublicErrorText(tc.err)
		if got != tc.want {
			t.Errorf("PublicErrorText(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if tc.err != nil {
			if again := SanitizeErrorText(got); again != got {
				t.Errorf("SanitizeErrorText(%q) = %q, want it unchanged", got, again)
			}
			if old := SanitizeErrorText(tc.err.Error()); strings.Contains(old, "10.") || strings.Contains(old, ":53") {
				t.Errorf("SanitizeErrorText(%q) = %q: leaks an address", tc.err.Error(), old)
			}
		}
	}
	if got := SanitizeErrorText(dnsErr.Error()); got != "dns_resolution_failed: the host name did not resolve" {
		t.Errorf("old DNS text sanitised to %q", got)
	}
	if got := SanitizeErrorText((&Error{Kind: KindStatus, Status: 500, Host: "h"}).Error()); got != "status: the endpoint answered HTTP 500" {
		t.Errorf("old status text sanitised to %q", got)
	}
	if got := SanitizeErrorText("status: the endpoint answered HTTP 10.0.0.1"); got != "unknown: the request failed" {
		t.Errorf("forged status text sanitised to %q", got)
	}
}

func TestPublicErrorFromClient(t *testing.T) {
	lookup := func(context.Context, string) ([]netip.Addr, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "hooks.example.com", Server: "10.255.255.53:53", IsNotFound: true}
	}
	c := New(Policy{MaxAttempts: 1}, WithLookup(lookup))
	_, err := c.Do(context.Background(), &Request{Method: "POST", URL: "https://hooks.example.com/in"})
	if err == nil {
		t.Fatal("want an error")
	}
	got := PublicErrorText(err)
	if got != "dns_resolution_failed: the host name did not resolve" || strings.Contains(got, ":53") {
		t.Errorf("PublicErrorText = %q (err %v)", got, err)
	}
}

func TestCheckHostPort(t *testing.T) {
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, tc := range []struct {
		url   string
		ports []int
		allow []netip.Prefix
		want  string
	}{
		{"https://hooks.example.com/in", nil, nil, ""},
		{"https://hooks.example.com:443/in", nil, nil, ""},
		{"https://93.184.216.34/in", nil, nil, ""},
		{"https://vault.internal:8200/", nil, nil, TargetHostBlocked},
		{"https://vault.internal/", nil, nil, TargetHostBlocked},
		{"https://printer.local/", nil, nil, TargetHostBlocked},
		{"https://corp/", nil, nil, TargetHostBlocked},
		{"https://localhost/", nil, nil, TargetHostBlocked},
		{"https://metadata.google.internal/", nil, nil, TargetHostBlocked},
		{"https://hooks.example.com:6379/", nil, nil, TargetPortNotAllowed},
		{"https://93.184.216.34:6379/", nil, nil, TargetPortNotAllowed},
		{"https://hooks.example.com:8443/", []int{443, 8443}, nil, ""},
		{"https://hooks.example.com:0/", nil, nil, TargetInvalidPort},
		{"https://127.0.0.1:6379/", nil, nil, TargetIPBlocked},
		{"http://127.0.0.1:45678/in", nil, loop, ""},
		{"https://10.0.0.1/", nil, loop, TargetIPBlocked},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		te := CheckHostPort(u, tc.ports, tc.allow)
		got := ""
		if te != nil {
			got = te.Code
		}
		if got != tc.want {
			t.Errorf("CheckHostPort(%q) = %v, want %q", tc.url, te, tc.want)
		}
	}
}
