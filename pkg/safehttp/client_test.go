package safehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDoFetchesThroughAllowPrivate(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("User-Agent"); got != userAgent {
			t.Errorf("User-Agent: got %q, want %q", got, userAgent)
		}
		if got := r.Header.Get("X-Trace"); got != "abc" {
			t.Errorf("X-Trace: got %q, want abc", got)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "hello, policy")
	})
	c, dials := newTestClient(t, Policy{AllowPrivate: loopbackOnly})

	resp, err := c.Do(context.Background(), &Request{URL: srv.URL + "/doc", Header: http.Header{"X-Trace": {"abc"}}})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if string(b) != "hello, policy" {
		t.Errorf("body: got %q, want %q", b, "hello, policy")
	}
	if resp.Status != 200 || resp.Attempts != 1 || resp.FinalURL != srv.URL+"/doc" || len(resp.Redirects) != 0 {
		t.Errorf("got status %d, attempts %d, final %q, redirects %v; want 200, 1, %q, none",
			resp.Status, resp.Attempts, resp.FinalURL, resp.Redirects, srv.URL+"/doc")
	}
	if resp.MediaType != "text/plain" || resp.SniffedType != "text/plain" {
		t.Errorf("got media type %q, sniffed %q; want text/plain twice", resp.MediaType, resp.SniffedType)
	}
	if resp.Timings.Connect <= 0 || resp.Timings.FirstByte <= 0 || resp.Timings.Total < resp.Timings.FirstByte {
		t.Errorf("timings %+v: want Connect > 0, FirstByte > 0, Total >= FirstByte", resp.Timings)
	}
	if got := dials.list(); len(got) != 1 || got[0] != srv.Listener.Addr().String() {
		t.Errorf("dials: got %v, want exactly [%s]", got, srv.Listener.Addr())
	}
}

func TestDoBlocksLoopbackWithoutException(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, text("secret admin page"))
	c, dials := newTestClient(t, Policy{})

	_, err := c.Do(context.Background(), &Request{URL: srv.URL})
	e := wantKind(t, err, KindBlockedAddress)
	if e.Attempts != 0 || !Permanent(err) {
		t.Errorf("got attempts %d, permanent %v; want 0 (refused before any request), true", e.Attempts, Permanent(err))
	}
	if hits.Load() != 0 || len(dials.list()) != 0 {
		t.Errorf("got %d requests and dials %v, want none", hits.Load(), dials.list())
	}
}

func TestDoBlocksNamesResolvingToBlockedAddresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		addrs []string
	}{
		{"private", []string{"10.0.0.5"}},
		{"metadata", []string{"169.254.169.254"}},
		{"IPv6 loopback", []string{"::1"}},
		{"ULA", []string{"fd00::1"}},
		{"mapped private", []string{"::ffff:192.168.1.1"}},
		{"NAT64 of loopback", []string{"64:ff9b::7f00:1"}},
		{"public then private", []string{"93.184.216.34", "10.0.0.5"}},
		{"private then public", []string{"10.0.0.5", "93.184.216.34"}},
		{"allowed loopback then metadata", []string{"127.0.0.1", "169.254.169.254"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, dials := newTestClient(t, Policy{AllowPrivate: loopbackOnly},
				WithLookup(staticDNS(map[string][]string{"docs.example.test": tt.addrs})))
			_, err := c.Do(context.Background(), &Request{URL: "http://docs.example.test/p.pdf"})
			e := wantKind(t, err, KindBlockedAddress)
			if e.Host != "docs.example.test" || !e.Addr.IsValid() {
				t.Errorf("got host %q, addr %v; want the name and the blocked address", e.Host, e.Addr)
			}
			if got := dials.list(); len(got) != 0 {
				t.Errorf("dials: got %v, want none: the block must happen before any dial", got)
			}
		})
	}
}

func TestDoResolvesOnceAndDialsTheCheckedAddress(t *testing.T) {
	t.Parallel()
	// The server closes every connection, so each request dials, and so resolves, again. The resolver
	// answers loopback (allowed) first and a private address later: DNS rebinding.
	srv, hits := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "ok")
	})
	var lookups atomic.Int64
	rebind := func(_ context.Context, host string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
	}
	c, dials := newTestClient(t, Policy{AllowPrivate: loopbackOnly}, WithLookup(rebind))
	url := "http://rebind.example.test:" + serverPort(t, srv) + "/"

	resp, err := c.Do(context.Background(), &Request{URL: url})
	if err != nil {
		t.Fatalf("first Do: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Timings.DNS <= 0 {
		t.Errorf("DNS timing: got %v, want > 0 for a looked-up name", resp.Timings.DNS)
	}
	if got := dials.list(); len(got) != 1 || got[0] != srv.Listener.Addr().String() {
		t.Fatalf("dials: got %v, want the checked literal %s", got, srv.Listener.Addr())
	}

	_, err = c.Do(context.Background(), &Request{URL: url, Method: http.MethodGet})
	wantKind(t, err, KindBlockedAddress)
	if got := dials.list(); len(got) != 1 {
		t.Errorf("dials after rebinding: got %v, want no new dial", got)
	}
	if hits.Load() != 1 {
		t.Errorf("requests: got %d, want 1", hits.Load())
	}
}

func TestControlRechecksSocketAddress(t *testing.T) {
	t.Parallel()
	c := New(Policy{AllowPrivate: loopbackOnly})
	tests := []struct {
		address string
		want    Kind
	}{
		{"127.0.0.1:8080", KindUnknown},
		{"93.184.216.34:443", KindUnknown},
		{"10.0.0.1:80", KindBlockedAddress},
		{"[::1]:80", KindBlockedAddress},
		{"[::ffff:169.254.169.254]:80", KindBlockedAddress},
		{"169.254.169.254:80", KindBlockedAddress},
		{"example.com:80", KindBlockedAddress},
	}
	for _, tt := range tests {
		err := c.control("tcp", tt.address, nil)
		if tt.want == KindUnknown {
			if err != nil {
				t.Errorf("control(%s): got %v, want nil", tt.address, err)
			}
			continue
		}
		wantKind(t, err, tt.want)
	}
}

func TestTransportUsesNoProxy(t *testing.T) {
	t.Parallel()
	c := New(Policy{})
	if c.transport.Proxy != nil {
		t.Error("Transport.Proxy: got a proxy function, want nil (no proxy from the environment)")
	}
}

func TestDoHTTPSWithHostname(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(text("tls ok"))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting client's handshake failure is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	// httptest's certificate is valid for example.com, which the test resolver maps to the server.
	dns := staticDNS(map[string][]string{"example.com": {"127.0.0.1"}})
	url := "https://example.com:" + serverPort(t, srv) + "/"

	c, _ := newTestClient(t, Policy{RequireHTTPS: true, AllowPrivate: loopbackOnly, AllowedHosts: []string{"example.com"}},
		WithLookup(dns), WithTLSConfig(&tls.Config{RootCAs: pool}))
	resp, err := c.Do(context.Background(), &Request{URL: url})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	resp.Body.Close()
	if resp.Timings.TLS <= 0 {
		t.Errorf("TLS timing: got %v, want > 0", resp.Timings.TLS)
	}

	// Without the test CA the certificate is unknown: a TLS failure, not retried.
	untrusting, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly}, WithLookup(dns))
	_, err = untrusting.Do(context.Background(), &Request{URL: url})
	e := wantKind(t, err, KindTLS)
	if e.Attempts != 1 || !Permanent(err) {
		t.Errorf("unknown CA: got attempts %d, permanent %v; want 1, true", e.Attempts, Permanent(err))
	}
}

func TestErrorsNeverContainURLSecretsOrBodies(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "BODY-SECRET: your token was wrong")
	})
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	// A server that answers garbage: net/http would quote the line in its error.
	garbage, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { garbage.Close() })
	go func() {
		for {
			conn, err := garbage.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, "BODY-SECRET is not HTTP\r\n\r\n")
			conn.Close()
		}
	}()

	for _, raw := range []string{
		"http://" + garbage.Addr().String() + "/hooks/PATH-SECRET?token=QUERY-SECRET",
		srv.URL + "/hooks/PATH-SECRET?token=QUERY-SECRET",
		closedURL + "/hooks/PATH-SECRET?token=QUERY-SECRET",
		"http://user:PASS-SECRET@127.0.0.1/",
		"ftp://127.0.0.1/PATH-SECRET?token=QUERY-SECRET",
		"http://10.0.0.1/PATH-SECRET?token=QUERY-SECRET",
	} {
		_, err := c.Do(context.Background(), &Request{URL: raw})
		if err == nil {
			t.Fatalf("Do(%q): got nil error", raw)
		}
		for _, secret := range []string{"BODY-SECRET", "PATH-SECRET", "QUERY-SECRET", "PASS-SECRET"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Do(%q): error %q contains %s", raw, err, secret)
			}
		}
	}
}

func TestDoCanceledContext(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)

	_, err := c.Do(ctx, &Request{URL: srv.URL})
	e := wantKind(t, err, KindCanceled)
	if e.Attempts != 1 || !errors.Is(err, context.Canceled) || !Permanent(err) {
		t.Errorf("got attempts %d, Is(Canceled) %v, permanent %v; want 1, true, true",
			e.Attempts, errors.Is(err, context.Canceled), Permanent(err))
	}
}

func TestDoRejectsBadRequests(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})
	if _, err := c.Do(context.Background(), nil); KindOf(err) != KindBadURL {
		t.Errorf("Do(nil): got %v, want KindBadURL", err)
	}
	if _, err := c.Do(context.Background(), &Request{Method: "GET /", URL: "http://127.0.0.1/"}); KindOf(err) != KindBadURL {
		t.Errorf("Do(bad method): got %v, want KindBadURL", err)
	}
}

func TestDoNotModified(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.Header().Set("ETag", `"v1"`)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		text("changed")(w, r)
	})
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, AllowedMIME: []string{"application/pdf"}})

	resp, err := c.Do(context.Background(), &Request{URL: srv.URL, Header: http.Header{"If-None-Match": {`"v1"`}}})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	resp.Body.Close()
	if resp.Status != http.StatusNotModified || resp.Header.Get("ETag") != `"v1"` {
		t.Errorf("got status %d, ETag %q; want 304, \"v1\"", resp.Status, resp.Header.Get("ETag"))
	}
}

// TestIdleConnsPerHostReusesConnections: rounds of concurrent requests to one host reuse the
// connections of the first round when the client keeps that many idle, and open new ones for most
// requests with net/http's default of two.
func TestIdleConnsPerHostReusesConnections(t *testing.T) {
	t.Parallel()
	const concurrent, rounds = 8, 5
	for _, tc := range []struct {
		name     string
		opts     []Option
		maxDials int
	}{
		{"kept", []Option{WithIdleConnsPerHost(concurrent)}, concurrent},
		{"default", nil, rounds * concurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			var arrived atomic.Int64
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				arrived.Add(1)
				<-release
			})
			c, dials := newTestClient(t, Policy{AllowPrivate: loopbackOnly}, tc.opts...)
			for range rounds {
				var wg sync.WaitGroup
				for range concurrent {
					wg.Go(func() {
						resp, err := c.Do(context.Background(), &Request{URL: srv.URL})
						if err != nil {
							t.Error(err)
							return
						}
						_ = resp.Body.Close()
					})
				}
				// Every request of the round is in flight at once before any is answered.
				for arrived.Load() < concurrent {
					time.Sleep(time.Millisecond)
				}
				for range concurrent {
					release <- struct{}{}
				}
				wg.Wait()
				arrived.Store(0)
			}
			n := len(dials.list())
			if n > tc.maxDials {
				t.Errorf("dials = %d, want at most %d", n, tc.maxDials)
			}
			if tc.opts == nil && n <= concurrent {
				t.Errorf("dials = %d with the default pool, want more than %d (the test would not show reuse)", n, concurrent)
			}
		})
	}
}
