package e2e

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// docServer serves payer-policy documents to the ingestion replicas and counts the fetches of each path.
type docServer struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]string
	hits  map[string]int
	delay time.Duration
}

func newDocServer(t *testing.T, delay time.Duration) *docServer {
	d := &docServer{pages: map[string]string{}, hits: map[string]int{}, delay: delay}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		body, ok := d.pages[r.URL.Path]
		d.hits[r.URL.Path]++
		d.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		// A fetch that takes a while, as a real one does, some longer than others: the window in which
		// another replica could take the same source.
		time.Sleep(d.delay + rand.N(2*d.delay))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *docServer) set(path, body string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pages[path] = body
}

func (d *docServer) hitCount(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// url is path's URL on host "localhost", which the replicas reach through INGESTION_ALLOW_PRIVATE_CIDRS.
func (d *docServer) url(path string) string {
	return strings.Replace(d.Server.URL, "127.0.0.1", "localhost", 1) + path
}

// The two versions of a policy document: from the first to the second, the extraction finds facts
// (a date, a removed code, an added prior authorization...) whose change events are auto-published.
const replicaPolicyV1 = `<html><head><title>Outpatient Advanced Imaging</title></head><body>
<h1>Outpatient Advanced Imaging Policy</h1>
<p>Effective Date: January 1, 2026</p>
<h2>Coverage</h2>
<p>MRI of the brain without and with contrast (CPT 70553) is covered when medically necessary.</p>
<p>CT of the abdomen (CPT 74150) is covered for suspected appendicitis in adults.</p>
<h2>Prior Authorization</h2>
<p>Prior authorization is required for MRI of the brain (CPT 70553) in all outpatient settings.</p>
<h2>Criteria</h2>
<p>Imaging must follow six weeks of documented conservative therapy.</p>
</body></html>`

const replicaPolicyV2 = `<html><head><title>Outpatient Advanced Imaging</title></head><body>
<h1>Outpatient Advanced Imaging Policy</h1>
<p>Effective Date: March 1, 2026</p>
<h2>Coverage</h2>
<p>MRI of the brain without and with contrast (CPT 70553) is covered when medically necessary.</p>
<h2>Prior Authorization</h2>
<p>Prior authorization is required for MRI of the brain (CPT 70553) in all outpatient settings.</p>
<p>Prior authorization is required for MRI of the lumbar spine (CPT 72148) in all outpatient settings.</p>
<h2>Criteria</h2>
<p>Imaging must follow four weeks of documented conservative therapy.</p>
</body></html>`

// fakeRegistry is a loopback MCP registry (GET /v0.1/servers, the official format, one page) that
// records when each listing was asked for.
type fakeRegistry struct {
	*httptest.Server
	mu      sync.Mutex
	servers map[string]registryEntry // by name
	polls   []time.Time              // first-page requests: one per poll
}

type registryEntry struct {
	server    map[string]any
	published time.Time
	updated   time.Time
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	r := &fakeRegistry{servers: map[string]registryEntry{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// registryServer is a server.json with one streamable-http remote.
func registryServer(name, description string) map[string]any {
	return map[string]any{
		"$schema":     "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		"name":        name,
		"version":     "1.0.0",
		"description": description,
		"remotes":     []any{map[string]any{"type": "streamable-http", "url": "https://mcp.example.com/" + strings.ReplaceAll(name, "/", "-")}},
	}
}

// publish adds or replaces a server (its one version, 1.0.0).
func (r *fakeRegistry) publish(server map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().UTC()
	name := server["name"].(string)
	e, ok := r.servers[name]
	if !ok {
		e.published = now
	}
	e.server, e.updated = server, now
	r.servers[name] = e
}

// pollTimes returns when each poll began, in order.
func (r *fakeRegistry) pollTimes() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.polls...)
}

func (r *fakeRegistry) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v0.1/servers" {
		http.NotFound(w, req)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.URL.Query().Get("cursor") == "" {
		r.polls = append(r.polls, time.Now())
	}
	// Every entry on one page, whatever updated_since says: a re-listed entry writes nothing.
	items := make([]any, 0, len(r.servers))
	for _, e := range r.servers {
		items = append(items, map[string]any{
			"server": e.server,
			"_meta": map[string]any{"io.modelcontextprotocol.registry/official": map[string]any{
				"status": "active", "isLatest": true,
				"publishedAt": e.published.Format(time.RFC3339Nano), "updatedAt": e.updated.Format(time.RFC3339Nano),
			}},
		})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"servers": items, "metadata": map[string]any{"count": len(items)}})
}

// hookReceiver is a loopback webhook receiver that counts deliveries by endpoint path and webhook-id
// header. It answers 200, except to the first delivery of each webhook-id on the path failFirst,
// which it answers 500, so that the delivery is retried.
type hookReceiver struct {
	*httptest.Server
	failFirst string
	mu        sync.Mutex
	count     map[string]int // path + " " + webhook-id
	total     int
}

func newHookReceiver(t *testing.T, failFirst string) *hookReceiver {
	h := &hookReceiver{count: map[string]int{}, failFirst: failFirst}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		k := req.URL.Path + " " + req.Header.Get("webhook-id")
		h.mu.Lock()
		h.count[k]++
		h.total++
		n := h.count[k]
		h.mu.Unlock()
		if req.URL.Path == h.failFirst && n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) snapshot() (map[string]int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[string]int, len(h.count))
	for k, v := range h.count {
		m[k] = v
	}
	return m, h.total
}

func (h *hookReceiver) totalCount() int {
	_, n := h.snapshot()
	return n
}
