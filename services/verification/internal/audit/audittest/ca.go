package audittest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultValidity is how long NewCA's root and leaf stay valid: thirty days, because the readiness
// rule tls-certificate-expiry fires on a certificate that expires within fourteen days, and a
// correct fixture must not trip it. The key never leaves the test process, so the span does not
// matter otherwise; a test of the expiry rule makes a short-lived CA with NewCAFor(24*time.Hour).
const DefaultValidity = 30 * 24 * time.Hour

// CA is a throwaway certificate authority for loopback TLS servers: an ECDSA P-256 root and one
// leaf for 127.0.0.1 and ::1 (and localhost) signed by it.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	leaf    tls.Certificate
}

// NewCA makes a root valid for DefaultValidity and a leaf for the loopback addresses.
func NewCA() (*CA, error) { return NewCAFor(DefaultValidity) }

// NewCAFor is NewCA with the root and the leaf valid for validity from now (backdated a minute so
// that a clock a little behind still accepts them).
func NewCAFor(validity time.Duration) (*CA, error) {
	now := time.Now()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("audittest: root key: %w", err)
	}
	root := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "audittest throwaway root", Organization: []string{"trustlayer audittest"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, root, root, &rootKey.PublicKey, rootKey)
	if err != nil {
		return nil, fmt.Errorf("audittest: root certificate: %w", err)
	}
	rootCert, err := x509.ParseCertificate(rootDER)
	if err != nil {
		return nil, fmt.Errorf("audittest: root certificate: %w", err)
	}

	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("audittest: leaf key: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, rootCert, &leafKey.PublicKey, rootKey)
	if err != nil {
		return nil, fmt.Errorf("audittest: leaf certificate: %w", err)
	}
	leafCert, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return nil, fmt.Errorf("audittest: leaf certificate: %w", err)
	}
	return &CA{
		cert:    rootCert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER}),
		// The chain holds the leaf only: a client that trusts the root needs nothing else.
		leaf: tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey, Leaf: leafCert},
	}, nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

// Pool is a certificate pool holding only the root: give it to an http.Client (or the audit
// engine) as RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Certificate is the root certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// WriteCertFile writes the root as PEM to dir/audittest-ca.pem and returns the path, for a child
// process that reads its trust store from SSL_CERT_FILE.
func (ca *CA) WriteCertFile(dir string) (string, error) {
	path := filepath.Join(dir, "audittest-ca.pem")
	if err := os.WriteFile(path, ca.certPEM, 0o600); err != nil {
		return "", fmt.Errorf("audittest: write CA: %w", err)
	}
	return path, nil
}

// TLSConfig is a server configuration presenting the loopback leaf, TLS 1.2 or later.
func (ca *CA) TLSConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{ca.leaf},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}
}

// Client is an http.Client that trusts only this CA, with a generous timeout for tests.
func (ca *CA) Client() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: true,
		},
	}
}

// Server is a fixture served over TLS on 127.0.0.1 with a leaf of the CA. Its handler serves the
// whole origin, so /.well-known/... paths reach it too.
type Server struct {
	// URL is the MCP endpoint, https://127.0.0.1:PORT/mcp.
	URL string
	// Origin is https://127.0.0.1:PORT.
	Origin string
	// Port is the listening port.
	Port int

	ts     *httptest.Server
	cancel context.CancelFunc
	once   sync.Once

	mu          sync.Mutex
	requests    int
	inFlight    int
	maxInFlight int
}

// Serve starts h over TLS on 127.0.0.1 with the CA's leaf. Close it when done; a closed Server's
// URL is a fixture for an unreachable server (nothing listens there any more, see Down).
func (ca *CA) Serve(h http.Handler) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.enter()
		defer s.leave()
		h.ServeHTTP(w, r)
	}))
	// Every request context descends from ctx, which Close cancels first: handlers that hold a
	// response open (event streams, Slow) watch their request context and return, so that
	// httptest's Close, which waits for every handler, does not hang.
	ts.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	ts.TLS = ca.TLSConfig()
	ts.EnableHTTP2 = true
	ts.StartTLS()
	s.ts = ts
	s.Origin = ts.URL
	s.URL = ts.URL + "/mcp"
	s.Port = ts.Listener.Addr().(*net.TCPAddr).Port
	return s
}

func (s *Server) enter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
}

func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
}

// Close stops the server: open responses are ended, the listener closed. It may be called twice.
func (s *Server) Close() {
	s.once.Do(func() {
		s.cancel()
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
}

// Requests counts the requests received so far, on every path.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// InFlight is the number of requests being handled now: 0 once a client has let go of every
// response (an event stream it cancelled included).
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// MaxInFlight is the highest number of requests that were being handled at the same time.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}
