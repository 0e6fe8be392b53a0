package ingest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

// A run's error is shown to API callers: it must not quote the resolver's address or resolved
// internal addresses, only the kind's fixed message.
func TestDescribeHidesResolver(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lookup safehttp.LookupFunc
		kind   string
		want   string
	}{
		{"does not resolve", func(context.Context, string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "no such host", Name: "docs.example.com", Server: "10.255.255.53:53", IsNotFound: true}
		}, "dns", "the host name did not resolve"},
		{"resolves to a blocked address", func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.99.0.7")}, nil
		}, "blocked_address", "the host is, or resolves to, an address that is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := safehttp.New(safehttp.Policy{MaxAttempts: 1}, safehttp.WithLookup(tc.lookup))
			_, err := c.Do(context.Background(), &safehttp.Request{Method: "GET", URL: "https://docs.example.com/terms"})
			if err == nil {
				t.Fatal("fetch succeeded")
			}
			if got := errorKind(err); got != tc.kind {
				t.Errorf("errorKind = %q, want %q", got, tc.kind)
			}
			got := describe(err)
			if got != tc.want {
				t.Errorf("describe = %q, want %q", got, tc.want)
			}
			for _, leak := range []string{":53", "10.255.255.53", "10.99.0.7", "no such host", "safehttp"} {
				if strings.Contains(got, leak) {
					t.Errorf("describe = %q contains %q", got, leak)
				}
			}
			if old := PublicError(err.Error()); old != tc.want {
				t.Errorf("PublicError(stored %q) = %q, want %q", err.Error(), old, tc.want)
			}
		})
	}
	if got := PublicError("no extractable text"); got != "no extractable text" {
		t.Errorf("PublicError changed a document error: %q", got)
	}
}
