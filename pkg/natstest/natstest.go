// Package natstest gives tests a NATS with JetStream: either the shared local server with a namespace of
// their own (Namespace), or an embedded server they can stop and restart (Server), for outage tests.
package natstest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// URLVar names the variable holding the shared test server's URL.
const URLVar = "NATS_TEST_URL"

// URL is the shared NATS server for tests (NATS_TEST_URL, default nats://127.0.0.1:4222).
func URL() string {
	if u := os.Getenv(URLVar); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// Namespace returns a fresh bus namespace, so that the streams and subjects of one test never meet
// another's on the shared server. Streams it creates stay on the server until their limits expire them;
// tests should delete what they create.
func Namespace(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "t" + hex.EncodeToString(b)
}

// Server is an embedded NATS server with JetStream on a fixed port and store directory, so that
// Restart brings back the same server with its streams.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// Start runs an embedded server on a free loopback port; it is shut down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}}
	s.start()
	// Later restarts must come back on the port the clients know.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.t.Fatalf("natstest: embedded server not ready")
	}
	s.srv = srv
}

// URL is the client URL of the server.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Stop shuts the server down (clients see a disconnect).
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart starts the server again on the same port with the same JetStream store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}
