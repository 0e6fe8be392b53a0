package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	"github.com/trustlayer/trustlayer/services/ingestion/app"
)

const adminToken = "ingestion-test-admin-token"

// stack is one ingestion service started in-process with a fixture document server.
type stack struct {
	*servicetest.Service
	t    *testing.T
	docs *docServer
}

func startService(t *testing.T, extra map[string]string) *stack {
	t.Helper()
	env := servicetest.Env(t, app.EnvPrefix, map[string]string{
		"INGESTION_ADMIN_TOKEN":         adminToken,
		"INGESTION_BLOB_URL":            "file://" + t.TempDir() + "?create_dir=1",
		"INGESTION_ALLOW_PRIVATE_CIDRS": "127.0.0.0/8,::1",
		"INGESTION_FETCH_TIMEOUT":       "3s",
		"INGESTION_SCHEDULER_INTERVAL":  "1h",
	}, extra)
	svc := servicetest.Start(t, env, app.Boot)
	// The stream exists before the first event is relayed, so no test waits on provisioning.
	if _, err := svc.Bus.EnsureStream(context.Background(), bus.PolicyChanges); err != nil {
		t.Fatal(err)
	}
	return &stack{Service: svc, t: t, docs: newDocServer(t)}
}

// call sends a request with token as X-Admin-Token, or with no such header when token is empty.
func (s *stack) call(method, path string, body any, token string) servicetest.Reply {
	s.t.Helper()
	var header map[string]string
	if token != "" {
		header = servicetest.Admin(token)
	}
	return s.Do(method, path, body, header)
}

// admin calls with the admin token and fails the test unless the status is want.
func (s *stack) admin(method, path string, body any, want int) map[string]any {
	s.t.Helper()
	r := s.Must(method, path, body, servicetest.Admin(adminToken), want)
	if want == http.StatusNoContent {
		return nil
	}
	return r.Object(s.t)
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
