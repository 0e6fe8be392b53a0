package audittest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestCA(t *testing.T) {
	ca, err := NewCAFor(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	root := ca.Certificate()
	if !root.IsCA || time.Until(root.NotAfter) > time.Hour || time.Until(root.NotAfter) < 59*time.Minute {
		t.Errorf("root: CA %v, not after %v", root.IsCA, root.NotAfter)
	}
	leaf := ca.TLSConfig().Certificates[0].Leaf
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("leaf does not verify for 127.0.0.1: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "::1"}); err != nil {
		t.Errorf("leaf does not verify for ::1: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), DNSName: "127.0.0.1"}); err == nil {
		t.Error("leaf verifies without the CA")
	}
	if v := ca.TLSConfig().MinVersion; v != tls.VersionTLS12 {
		t.Errorf("min TLS version %x", v)
	}
	if d := time.Until(fixtureCA.TLSConfig().Certificates[0].Leaf.NotAfter); d < 14*24*time.Hour {
		t.Errorf("NewCA's leaf expires in %v, inside the readiness rule's 14-day window", d)
	}

	path, err := ca.WriteCertFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s is not a PEM certificate", path)
	}
	if c, err := x509.ParseCertificate(block.Bytes); err != nil || !c.Equal(root) {
		t.Errorf("%s holds another certificate (%v)", path, err)
	}
}

// TestServer checks the TLS server: only the CA is trusted, TLS 1.1 is refused, the request
// counters count, and Close ends open responses and may be repeated.
func TestServer(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	s := fixtureCA.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer s.Close()
	if !strings.HasPrefix(s.URL, "https://127.0.0.1:") || !strings.HasSuffix(s.URL, EndpointPath) || s.Port == 0 || s.Origin+EndpointPath != s.URL {
		t.Fatalf("URL %q, origin %q, port %d", s.URL, s.Origin, s.Port)
	}

	if _, err := http.Get(s.URL); err == nil {
		t.Error("a client with the system roots trusts the fixture")
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: fixtureCA.Pool(), MaxVersion: tls.VersionTLS11}}}
	if _, err := old.Get(s.URL); err == nil {
		t.Error("TLS 1.1 accepted")
	}

	c := fixtureCA.Client()
	before := s.Requests()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			resp, err := c.Get(s.Origin + "/block")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	for range 3 {
		<-entered
	}
	if n := s.MaxInFlight(); n != 3 {
		t.Errorf("MaxInFlight %d with three requests blocked, want 3", n)
	}
	close(release)
	wg.Wait()
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("TLS state %+v", resp.TLS)
	}
	if got := s.Requests() - before; got != 4 {
		t.Errorf("Requests counted %d, want 4", got)
	}
	if n := s.MaxInFlight(); n != 3 {
		t.Errorf("MaxInFlight %d after the burst, want 3", n)
	}

	// A response held open is ended by Close, which returns.
	go func() { _, _ = c.Get(s.Origin + "/block") }()
	<-entered
	done := make(chan struct{})
	go func() { s.Close(); s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on an open response")
	}
	if _, err := c.Get(s.URL); err == nil {
		t.Error("a closed server answers")
	}
}

func TestDown(t *testing.T) {
	url := Down()
	c := fixtureCA.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	_, err := c.Do(req)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("POST %s: %v, want connection refused", url, err)
	}
}
