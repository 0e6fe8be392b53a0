package safehttp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loopbackOnly is the operator exception the tests use to reach their httptest servers; the guard
// itself is never switched off.
var loopbackOnly = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// dialLog records every address a test client dials.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (l *dialLog) add(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs = append(l.addrs, a)
}

func (l *dialLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.addrs...)
}

// noDNS stands in for the resolver: tests never query real DNS.
func noDNS(_ context.Context, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

// staticDNS resolves names from a fixed table.
func staticDNS(table map[string][]string) LookupFunc {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		texts, ok := table[host]
		if !ok {
			return noDNS(context.Background(), host)
		}
		addrs := make([]netip.Addr, len(texts))
		for i, s := range texts {
			addrs[i] = netip.MustParseAddr(s)
		}
		return addrs, nil
	}
}

// newTestClient returns a Client with fast back-off and a resolver that knows no names (opts may
// replace it), whose dials are logged and, as a last line of defence for the test machine, refused
// unless they go to loopback.
func newTestClient(t *testing.T, p Policy, opts ...Option) (*Client, *dialLog) {
	t.Helper()
	opts = append([]Option{WithLookup(noDNS), WithBackoff(time.Millisecond, 4*time.Millisecond)}, opts...)
	c := New(p, opts...)
	dials := &dialLog{}
	dial := c.dial
	c.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		dials.add(address)
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("dial %s: tests may dial loopback only", address)
			return nil, errors.New("test refused a non-loopback dial")
		}
		return dial(ctx, network, address)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c, dials
}

// countingServer starts a loopback server running h and counts its requests.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// serverPort returns the port of a test server.
func serverPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// wantKind fails the test unless err is an *Error of kind k, and returns it.
func wantKind(t *testing.T, err error, k Kind) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want *Error of kind %v", err, err, k)
	}
	if e.Kind != k {
		t.Fatalf("got kind %v (%v), want %v", e.Kind, err, k)
	}
	return e
}

func text(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(s))
	}
}
