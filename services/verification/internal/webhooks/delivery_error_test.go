package webhooks

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

// A failed attempt records a stable code and a fixed message: never the resolver's address, a resolved
// internal address or a Go error, which customers could use to probe internal DNS. The log keeps the
// detail.
func TestSendRecordsSafeError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lookup safehttp.LookupFunc
		want   string
	}{
		{"does not resolve", func(context.Context, string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "no such host", Name: "hooks.example.com", Server: "10.255.255.53:53", IsNotFound: true}
		}, "dns_resolution_failed: the host name did not resolve"},
		{"resolves to a blocked address", func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.99.0.7")}, nil
		}, "ssrf_ip_blocked: the host is, or resolves to, an address that is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := testService()
			s.log = slog.New(slog.NewTextHandler(&logs, nil))
			s.client = safehttp.New(safehttp.Policy{MaxAttempts: 1, MaxRedirects: -1}, safehttp.WithLookup(tc.lookup))
			secret, err := NewSecret()
			if err != nil {
				t.Fatal(err)
			}
			c := Claim{DeliveryID: uuid.New(), Attempt: 1, EventID: uuid.New(), Payload: []byte(`{}`),
				Endpoint: ClaimedEndpoint{ID: uuid.New(), URL: "https://hooks.example.com/in?token=s3cret", Secret: secret}}
			rec, err := s.send(context.Background(), c)
			if err == nil {
				t.Fatal("send succeeded")
			}
			if rec.Error != tc.want {
				t.Errorf("attempt error = %q, want %q", rec.Error, tc.want)
			}
			for _, leak := range []string{":53", "10.255.255.53", "10.99.0.7", "safehttp", "no such host"} {
				if strings.Contains(rec.Error, leak) {
					t.Errorf("attempt error %q contains %q", rec.Error, leak)
				}
			}
			if !strings.Contains(logs.String(), "hooks.example.com") || strings.Contains(logs.String(), "s3cret") || strings.Contains(logs.String(), secret) {
				t.Errorf("log should name the host and no secret: %s", logs.String())
			}
		})
	}
}

func TestPublicAttemptErrorMapsOldTexts(t *testing.T) {
	for stored, want := range map[string]string{
		`safehttp: DNS lookup failed: host "x.internal": lookup x.internal on 10.255.255.53:53: no such host`: "dns_resolution_failed: the host name did not resolve",
		`safehttp: blocked address: host "h.example.com": address 10.1.2.3: private network (RFC 1918)`:       "ssrf_ip_blocked: the host is, or resolves to, an address that is not allowed",
		`safehttp: unexpected status 500: host "h.example.com"`:                                               "status: the endpoint answered HTTP 500",
		"cannot sign: malformed secret": errMalformedSecret,
		"":                              "",
	} {
		if got := PublicAttemptError(stored); got != want {
			t.Errorf("PublicAttemptError(%q) = %q, want %q", stored, got, want)
		}
	}
}
