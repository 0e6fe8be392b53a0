package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/ingestion/app"
)

const adminToken = "ingestion-test-admin-token"

// stack is one ingestion service started in-process with a fixture document server.
type stack struct {
	t     *testing.T
	base  string
	dbURL string
	pool  *pgxpool.Pool
	bus   *bus.Bus
	docs  *docServer
}

func startService(t *testing.T, extra map[string]string) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{
		"INGESTION_DATABASE_URL":        pgtest.NewDatabase(t),
		"INGESTION_ADMIN_TOKEN":         adminToken,
		"INGESTION_HTTP_ADDR":           "127.0.0.1:0",
		"INGESTION_GRPC_ADDR":           "127.0.0.1:0",
		"INGESTION_BLOB_URL":            "file://" + t.TempDir() + "?create_dir=1",
		"INGESTION_ALLOW_PRIVATE_CIDRS": "127.0.0.0/8,::1",
		"INGESTION_FETCH_TIMEOUT":       "3s",
		"INGESTION_SCHEDULER_INTERVAL":  "1h",
		"NATS_URL":                      natstest.URL(),
		"NATS_NAMESPACE":                natstest.Namespace(t),
	}
	for k, v := range extra {
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := platform.Open(ctx, cfg.Spec, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(ctx, cfg, p); err != nil {
		t.Fatal(err)
	}
	// The stream exists before the first event is relayed, so no test waits on provisioning.
	if _, err := p.Bus.EnsureStream(ctx, bus.PolicyChanges); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() {
		_ = p.Bus.JS.DeleteStream(context.Background(), p.Bus.StreamName(bus.PolicyChanges.Name))
		cancel()
		<-done
		p.Close()
	})
	docs := newDocServer(t)
	return &stack{t: t, base: "http://" + p.Server.HTTPAddr(), dbURL: env["INGESTION_DATABASE_URL"], pool: p.Pool, bus: p.Bus, docs: docs}
}

type reply struct {
	status int
	body   []byte
}

func (r reply) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %s is not a JSON object", r.body)
	}
	return m
}

func (s *stack) call(method, path string, body any, token string) reply {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Admin-Token", token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: b}
}

// admin calls with the admin token and fails the test unless the status is want.
func (s *stack) admin(method, path string, body any, want int) map[string]any {
	s.t.Helper()
	r := s.call(method, path, body, adminToken)
	if r.status != want {
		s.t.Fatalf("%s %s: got %d %s, want %d", method, path, r.status, r.body, want)
	}
	if want == http.StatusNoContent {
		return nil
	}
	return r.obj(s.t)
}

func (s *stack) count(query string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// docServer serves fixture documents whose content, type and status a test changes between runs.
type docServer struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]page
	hits  map[string]int
}

type page struct {
	status      int
	contentType string
	body        string
	delay       time.Duration
}

func newDocServer(t *testing.T) *docServer {
	d := &docServer{pages: map[string]page{}, hits: map[string]int{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		p, ok := d.pages[r.URL.Path]
		d.hits[r.URL.Path]++
		d.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		time.Sleep(p.delay)
		w.Header().Set("Content-Type", p.contentType)
		if p.status != 0 {
			w.WriteHeader(p.status)
		}
		_, _ = io.WriteString(w, p.body)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *docServer) set(path string, p page) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.contentType == "" {
		p.contentType = "text/html; charset=utf-8"
	}
	d.pages[path] = p
}

func (d *docServer) hitCount(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// url is the fixture URL of path, on host "localhost" (resolved by the service, allowed as loopback
// only through INGESTION_ALLOW_PRIVATE_CIDRS, which must list both 127.0.0.0/8 and ::1 since every
// address a name resolves to must pass).
func (d *docServer) url(path string) string {
	return strings.Replace(d.Server.URL, "127.0.0.1", "localhost", 1) + path
}

// literalSource is a registration of one fixture URL.
func (s *stack) literalSource(path string, overrides map[string]any) map[string]any {
	body := map[string]any{
		"organization": "Acme Health Plan", "program": "Commercial", "jurisdiction": "US-CA",
		"allowed_hosts": []string{"localhost"}, "adapter": "literal_url",
		"adapter_config": map[string]any{"url": s.docs.url(path)}, "cadence_seconds": 3600,
		"terms_review_state": "approved",
	}
	for k, v := range overrides {
		body[k] = v
	}
	return s.admin("POST", "/v1/sources", body, http.StatusCreated)
}
