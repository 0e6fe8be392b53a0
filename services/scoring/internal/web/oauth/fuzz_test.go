package oauth

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

// FuzzValidateRegistration feeds client metadata from anyone (POST /oauth/register): whatever is
// accepted has only https redirect URIs, or http ones on a loopback host, without fragments.
func FuzzValidateRegistration(f *testing.F) {
	for _, seed := range []string{"http://127.0.0.1:5000/cb", "https://agent.example/cb", "http://localhost/cb",
		"http://[::1]:80/x?y=1", "cursor://cb", "https://a.example/cb#f", "javascript:alert(1)", "http://evil.example/cb",
		"http://127.0.0.1.evil.example/cb", "https://user@host/cb", "", "//host/cb", "HTTP://127.0.0.1/cb"} {
		f.Add(seed, "none", "authorization_code")
	}
	f.Fuzz(func(t *testing.T, redirect, authMethod, grant string) {
		c, err := validateRegistration(registrationRequest{RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: authMethod, GrantTypes: []string{grant}})
		if err != nil {
			return
		}
		u, perr := url.Parse(c.RedirectURIs[0])
		if perr != nil || u.Fragment != "" || u.User != nil {
			t.Fatalf("accepted %q", redirect)
		}
		loopback := u.Hostname() == "localhost" || strings.HasSuffix(u.Hostname(), ".localhost") || net.ParseIP(u.Hostname()).IsLoopback()
		if !(u.Scheme == "https" || u.Scheme == "http" && loopback) {
			t.Fatalf("accepted %q: scheme %q host %q", redirect, u.Scheme, u.Hostname())
		}
		if authMethod != "" && authMethod != "none" {
			t.Fatalf("accepted token_endpoint_auth_method %q", authMethod)
		}
	})
}

// FuzzReturnTo: /oauth/login's return_to comes from the query string; it may only lead back to this
// server's authorize endpoint (no open redirect).
func FuzzReturnTo(f *testing.F) {
	for _, seed := range []string{"/oauth/authorize?client_id=x", "https://evil.example/oauth/authorize", "//evil.example/oauth/authorize",
		"/oauth/authorize/../x", "/\\evil.example", "/oauth/authorize?x#y", "", "javascript:x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := returnTo(raw)
		if got == "" {
			return
		}
		u, err := url.Parse(got)
		if err != nil || !strings.HasPrefix(got, AuthorizePath+"?") || u.Host != "" || u.Scheme != "" || u.Path != AuthorizePath {
			t.Fatalf("returnTo(%q) = %q", raw, got)
		}
	})
}
