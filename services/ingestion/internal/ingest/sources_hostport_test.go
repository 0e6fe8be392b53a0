package ingest

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

// Registration applies the audit targets' host and port rules without DNS: names that only reach
// private networks and unusual ports are refused (422 naming the field) unless the operator opened
// private networks.
func TestValidateSourceHostPort(t *testing.T) {
	strict := NewService(nil, nil, nil, slog.Default(), nil, Limits{})
	open := NewService(nil, nil, nil, slog.Default(), []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, Limits{})
	for _, tc := range []struct {
		svc   *Service
		host  string
		url   string
		field string // "" when accepted
		code  string
	}{
		{strict, "vault.internal", "https://vault.internal:8200/", "allowed_hosts", "ssrf_host_blocked"},
		{strict, "printer.local", "https://printer.local/", "allowed_hosts", "ssrf_host_blocked"},
		{strict, "corp", "https://corp/", "allowed_hosts", "ssrf_host_blocked"},
		{strict, "docs.acme.example", "https://docs.acme.example:6379/p", "adapter_config.url", "https_port_required"},
		{strict, "docs.acme.example", "https://docs.acme.example/p", "", ""},
		{strict, "docs.acme.example", "http://docs.acme.example:80/p", "", ""},
		{strict, "93.184.216.34", "https://93.184.216.34/p", "", ""},
		{open, "localhost", "http://localhost:45678/p", "", ""},
	} {
		_, err := tc.svc.validateSource(NewSource{
			Organization: "Acme", Program: "P", Jurisdiction: "US", AllowedHosts: []string{tc.host},
			Adapter: AdapterLiteralURL, AdapterConfig: map[string]any{"url": tc.url},
		})
		var v *ValidationError
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v, want accepted", tc.url, err)
			}
			continue
		}
		if !errors.As(err, &v) {
			t.Errorf("%s: %v, want a validation error", tc.url, err)
			continue
		}
		found := false
		for _, p := range v.Problems {
			if p.Field == tc.field && strings.Contains(p.Message, tc.code) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: problems %+v, want %s on %s", tc.url, v.Problems, tc.code, tc.field)
		}
	}
}
