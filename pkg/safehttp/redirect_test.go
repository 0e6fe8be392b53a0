package safehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// redirectTo answers every request with a 302 to location.
func redirectTo(location string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusFound)
	}
}

func TestRedirectChainRecorded(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/a", redirectTo("/b"))
	mux.Handle("/b", http.RedirectHandler("/c?x=1", http.StatusMovedPermanently))
	mux.Handle("/c", text("final"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})

	resp, err := c.Do(context.Background(), &Request{URL: srv.URL + "/a"})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Body.Close()
	if want := []string{srv.URL + "/a", srv.URL + "/b"}; !slices.Equal(resp.Redirects, want) {
		t.Errorf("Redirects: got %v, want %v", resp.Redirects, want)
	}
	if want := srv.URL + "/c?x=1"; resp.FinalURL != want {
		t.Errorf("FinalURL: got %q, want %q", resp.FinalURL, want)
	}
}

func TestRedirectHopsRechecked(t *testing.T) {
	t.Parallel()
	target, targetHits := countingServer(t, text("should not be reached"))
	port := serverPort(t, target)
	dns := staticDNS(map[string][]string{
		"start.example.test":    {"127.0.0.1"},
		"internal.example.test": {"10.0.0.7"},
		"elsewhere.test":        {"127.0.0.1"},
	})
	tests := []struct {
		name     string
		policy   Policy
		location string
		want     Kind
	}{
		{"to metadata literal", Policy{}, "http://169.254.169.254/latest/meta-data/", KindBlockedAddress},
		{"to IPv6 loopback", Policy{}, "http://[::1]:" + port + "/", KindBlockedAddress},
		{"to mapped private", Policy{}, "http://[::ffff:10.0.0.1]/", KindBlockedAddress},
		{"to name resolving private", Policy{}, "http://internal.example.test:" + port + "/", KindBlockedAddress},
		{"to localhost", Policy{}, "http://localhost.:" + port + "/", KindBlockedAddress},
		{"off the allowlist", Policy{AllowedHosts: []string{"*.example.test"}}, "http://elsewhere.test:" + port + "/", KindHostNotAllowed},
		{"to another scheme", Policy{}, "ftp://start.example.test/", KindBadURL},
		{"to credentials", Policy{}, "http://u:p@start.example.test:" + port + "/", KindBadURL},
		{"to decimal IP", Policy{}, "http://2130706433:" + port + "/", KindBadURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start, _ := countingServer(t, redirectTo(tt.location))
			p := tt.policy
			p.AllowPrivate = loopbackOnly
			c, dials := newTestClient(t, p, WithLookup(dns))

			_, err := c.Do(context.Background(), &Request{URL: "http://start.example.test:" + serverPort(t, start) + "/"})
			e := wantKind(t, err, tt.want)
			if e.Attempts != 1 {
				t.Errorf("attempts: got %d, want 1 (refusals are permanent)", e.Attempts)
			}
			if got := dials.list(); !slices.Equal(got, []string{start.Listener.Addr().String()}) {
				t.Errorf("dials: got %v, want only the first server %s", got, start.Listener.Addr())
			}
		})
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("redirect target: got %d requests, want 0", n)
	}
}

func TestRedirectToHTTPRefusedWhenHTTPSRequired(t *testing.T) {
	t.Parallel()
	plain, plainHits := countingServer(t, text("downgraded"))
	secure := httptest.NewTLSServer(redirectTo(plain.URL + "/"))
	t.Cleanup(secure.Close)
	pool := x509.NewCertPool()
	pool.AddCert(secure.Certificate())
	c, _ := newTestClient(t, Policy{RequireHTTPS: true, AllowPrivate: loopbackOnly}, WithTLSConfig(&tls.Config{RootCAs: pool}))

	_, err := c.Do(context.Background(), &Request{URL: secure.URL + "/"})
	wantKind(t, err, KindBadURL)
	if plainHits.Load() != 0 {
		t.Errorf("http target: got %d requests, want 0", plainHits.Load())
	}
}

func TestTooManyRedirects(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, redirectTo("/loop"))
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, MaxRedirects: 2})

	_, err := c.Do(context.Background(), &Request{URL: srv.URL + "/loop"})
	e := wantKind(t, err, KindTooManyRedirects)
	if e.Attempts != 1 || hits.Load() != 3 {
		t.Errorf("got attempts %d, requests %d; want 1 attempt of 3 requests (2 redirects followed)", e.Attempts, hits.Load())
	}
}

func TestRedirectsDisabled(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, redirectTo("/elsewhere"))
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, MaxRedirects: -1})

	_, err := c.Do(context.Background(), &Request{URL: srv.URL + "/"})
	e := wantKind(t, err, KindStatus)
	if e.Status != http.StatusFound || hits.Load() != 1 {
		t.Errorf("got status %d after %d requests, want 302 after 1", e.Status, hits.Load())
	}
}

func TestRedirect307ResendsBody(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"event":"score.changed"}`)
	mux := http.NewServeMux()
	mux.Handle("/old", http.RedirectHandler("/new", http.StatusTemporaryRedirect))
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !bytes.Equal(got, payload) {
			t.Errorf("after 307: got %s %q, want POST %q", r.Method, got, payload)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})

	resp, err := c.Do(context.Background(), &Request{Method: http.MethodPost, URL: srv.URL + "/old", Body: payload})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	resp.Body.Close()
	if resp.Status != http.StatusNoContent || len(resp.Redirects) != 1 {
		t.Errorf("got status %d, redirects %v; want 204 after one redirect", resp.Status, resp.Redirects)
	}
}
