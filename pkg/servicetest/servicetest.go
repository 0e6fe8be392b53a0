// Package servicetest starts one service in-process against a fresh PostgreSQL database and a NATS
// namespace of its own, and calls it over real HTTP: the harness every service's tests share.
//
// A test builds the environment with Env, starts the service with Start and the service's own Boot
// (its configuration loading and registration), then calls it with Do:
//
//	env := servicetest.Env(t, "SCORING_", map[string]string{"SCORING_ADMIN_TOKEN": token})
//	svc := servicetest.Start(t, env, app.Boot)
//	r := svc.Do("POST", "/v1/keys/trial", nil, nil)
package servicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
)

// Boot is how a test starts a service: the same function its binary serves through.
type Boot = platform.Boot

// Env is the environment of a service whose variables start with prefix (for example "SCORING_"):
// a fresh database, loopback listeners on free ports, the shared test NATS with a namespace of its
// own, and then extra, whose values win.
func Env(t testing.TB, prefix string, extra ...map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{
		prefix + "DATABASE_URL": pgtest.NewDatabase(t),
		prefix + "HTTP_ADDR":    "127.0.0.1:0",
		prefix + "GRPC_ADDR":    "127.0.0.1:0",
		"NATS_URL":              natstest.URL(),
		"NATS_NAMESPACE":        natstest.Namespace(t),
	}
	for _, e := range extra {
		for k, v := range e {
			env[k] = v
		}
	}
	return env
}

// Service is a service running in-process for one test.
type Service struct {
	t        testing.TB
	URL      string // http://127.0.0.1:port, the HTTP listener
	GRPCAddr string // the gRPC listener's host:port
	Platform *platform.Platform
	Pool     *pgxpool.Pool
	Bus      *bus.Bus
	Env      map[string]string
	Logs     *Logs
	stop     func()
	runErr   error
}

// Start boots the service with env and runs it until the test ends (or Stop). The streams it made in
// its namespace are deleted at the end, since they would otherwise stay on the shared server.
func Start(t testing.TB, env map[string]string, boot Boot) *Service {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &Logs{}
	p, err := boot(ctx, func(k string) string { return env[k] }, logs)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &Service{
		t: t, URL: "http://" + p.Server.HTTPAddr(), GRPCAddr: p.Server.GRPCAddr(), Platform: p,
		Pool: p.Pool, Bus: p.Bus, Env: env, Logs: logs,
	}
	done := make(chan struct{})
	go func() { s.runErr = p.Run(ctx); close(done) }()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			deleteStreams(p.Bus)
			p.Close()
		})
	}
	t.Cleanup(s.stop)
	return s
}

// Stop drains and stops the service now (it is also stopped when the test ends) and returns what
// the service's Run returned: nil for a clean stop.
func (s *Service) Stop() error {
	s.stop()
	return s.runErr
}

func deleteStreams(b *bus.Bus) {
	ctx := context.Background()
	prefix := b.StreamName("")
	if prefix == "" {
		return // no namespace: the streams are not the test's alone
	}
	names := b.JS.StreamNames(ctx)
	for name := range names.Name() {
		if strings.HasPrefix(name, prefix) {
			_ = b.JS.DeleteStream(ctx, name)
		}
	}
}

// Reply is one HTTP response, read whole.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Object decodes the body as a JSON object and fails the test when it is not one.
func (r Reply) Object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body %s is not a JSON object", r.Body)
	}
	return m
}

// Decode decodes the body as JSON into v and fails the test when it does not fit.
func (r Reply) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
}

// Do sends a request to the service. A body that is a string or []byte is sent as it is, an
// io.Reader as a stream of unknown length (chunked), anything else as its JSON encoding; Content-Type is application/json unless header sets it. It fails the
// test only when no response came back.
func (s *Service) Do(method, path string, body any, header map[string]string) Reply {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	case io.Reader:
		r = b
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Must sends a request like Do and fails the test unless the status is want.
func (s *Service) Must(method, path string, body any, header map[string]string, want int) Reply {
	s.t.Helper()
	r := s.Do(method, path, body, header)
	if r.Status != want {
		s.t.Fatalf("%s %s: got %d %s, want %d", method, path, r.Status, r.Body, want)
	}
	return r
}

// Count runs a query that returns one integer (a count) against the service's database.
func (s *Service) Count(query string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Bearer is the header of a bearer credential.
func Bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// Admin is the header of an admin token.
func Admin(token string) map[string]string { return map[string]string{"X-Admin-Token": token} }

// Logs collects the service's log lines; the service writes them from many goroutines.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is everything logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Unsized is a body of n spaces that the client sends chunked, of unknown length, so that only
// reading it tells the server how large it is.
func Unsized(n int) io.Reader { return &unsized{left: n} }

type unsized struct{ left int }

func (u *unsized) Read(p []byte) (int, error) {
	if u.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), u.left)
	for i := range n {
		p[i] = ' '
	}
	u.left -= n
	return n, nil
}
