// Package registryfixture is a loopback MCP registry for tests. It serves GET /v0.1/servers in the
// official registry's format (cursor, limit, updated_since; items {server, _meta.official}; metadata
// {nextCursor, count}) from entries a test publishes and changes between polls, and fails on demand:
// down, 5xx, a page that is not JSON or has the wrong shape, an invalid item.
package registryfixture

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is how a page fails.
type Fault int

// The faults a page can have.
const (
	NoFault Fault = iota
	// Down drops the connection without an answer.
	Down
	// ServerError answers 500.
	ServerError
	// NotJSON answers 200 application/json with a body that is not JSON.
	NotJSON
	// WrongShape answers a JSON object whose servers member is not an array.
	WrongShape
	// BadItem adds an item whose server has no valid name to the page (the page itself stays valid).
	BadItem
)

const officialMeta = "io.modelcontextprotocol.registry/official"

type entry struct {
	name, version string
	server        json.RawMessage
	status        string
	statusMessage string
	isLatest      bool
	publishedAt   time.Time
	updatedAt     time.Time
}

// key orders entries by name, then version.
func (e *entry) key() string { return e.name + "\x00" + e.version }

// Registry is the fixture server.
type Registry struct {
	*httptest.Server
	mu      sync.Mutex
	entries map[string]*entry // by name + "@" + version
	latest  map[string]*entry // by name
	// order is entries in listing order, rebuilt after a publish, so that a page of a large fixture
	// costs a binary search rather than a sort.
	order    []*entry
	now      time.Time
	faults   map[int]Fault // by page number, 1-based; 0 applies to every page
	requests []url.Values
}

// New starts a fixture registry on loopback; it stops when the test ends. Its clock starts at a fixed
// time and moves one second per change (Advance moves it further), so that updatedAt values are
// predictable.
func New(t testing.TB) *Registry {
	r := &Registry{entries: map[string]*entry{}, latest: map[string]*entry{}, faults: map[int]Fault{}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Server returns a typical server.json: one npm package with a secret environment variable and one
// streamable-http remote. Tests edit the map before publishing it.
func Server(name, version string) map[string]any {
	return map[string]any{
		"$schema":     "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		"name":        name,
		"version":     version,
		"title":       "Weather",
		"description": "Weather forecasts for " + name,
		"repository":  map[string]any{"url": "https://github.com/example/weather", "source": "github", "id": "r-1001"},
		"packages": []any{map[string]any{
			"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org", "identifier": "@example/weather",
			"version": version, "transport": map[string]any{"type": "stdio"},
			"environmentVariables": []any{map[string]any{"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true}},
		}},
		"remotes": []any{map[string]any{"type": "streamable-http", "url": "https://mcp.example.com/weather"}},
	}
}

func (r *Registry) tick() time.Time {
	r.now = r.now.Add(time.Second)
	return r.now
}

// Advance moves the clock forward.
func (r *Registry) Advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.now.Add(d)
}

// Publish adds a server version (or replaces its content), active. A new version becomes the latest,
// and the previous latest is marked not latest and updated, as the official registry does.
func (r *Registry) Publish(server map[string]any) {
	raw, err := json.Marshal(server)
	if err != nil {
		panic(err) // a test's literal
	}
	name, _ := server["name"].(string)
	version, _ := server["version"].(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.tick()
	e, ok := r.entries[name+"@"+version]
	if !ok {
		if prev := r.latest[name]; prev != nil {
			prev.isLatest, prev.updatedAt = false, at
		}
		e = &entry{name: name, version: version, status: "active", isLatest: true, publishedAt: at}
		r.entries[name+"@"+version] = e
		r.latest[name] = e
		r.order = nil
	}
	e.server, e.updatedAt = raw, at
}

// SetStatus changes a version's status (active, deprecated, deleted), or any string for tests of
// invalid statuses.
func (r *Registry) SetStatus(name, version, status, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name+"@"+version]
	if !ok {
		panic("registryfixture: no entry " + name + "@" + version)
	}
	e.status, e.statusMessage, e.updatedAt = status, message, r.tick()
}

// Fail makes page n (1-based; 0 for every page) fail with f until Fail(n, NoFault).
func (r *Registry) Fail(n int, f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[n] = f
}

// Requests returns the query of every listing request so far.
func (r *Registry) Requests() []url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// Len returns the number of entries (server versions).
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v0.1/servers" {
		http.NotFound(w, req)
		return
	}
	q := req.URL.Query()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, q)

	limit := 30
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 {
		limit = min(l, 100)
	}
	var since time.Time
	if s := q.Get("updated_since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			http.Error(w, `{"error":"bad updated_since"}`, http.StatusBadRequest)
			return
		}
		since = t
	}
	after, page := "", 1
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			http.Error(w, `{"error":"bad cursor"}`, http.StatusBadRequest)
			return
		}
		pos, key, _ := strings.Cut(string(b), "|")
		after = key
		page, _ = strconv.Atoi(pos)
	}
	fault := r.faults[page]
	if fault == NoFault {
		fault = r.faults[0]
	}
	switch fault {
	case Down:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case ServerError:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	case NotJSON:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"servers": [ {"server": `))
		return
	case WrongShape:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"servers": {"name": "not a list"}, "metadata": {"count": 1}}`))
		return
	}

	if r.order == nil {
		r.order = slices.Collect(maps.Values(r.entries))
		// The official registry lists by name, then version.
		slices.SortFunc(r.order, func(a, b *entry) int { return strings.Compare(a.key(), b.key()) })
	}
	start, _ := slices.BinarySearchFunc(r.order, after, func(e *entry, k string) int { return strings.Compare(e.key(), k) })
	var list []*entry
	for _, e := range r.order[start:] {
		if e.key() > after && (since.IsZero() || e.updatedAt.After(since)) {
			list = append(list, e)
			if len(list) > limit {
				break
			}
		}
	}
	next := ""
	if len(list) > limit {
		list = list[:limit]
		last := list[limit-1]
		next = base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%d|%s", page+1, last.key())))
	}
	items := make([]any, 0, len(list)+1)
	for _, e := range list {
		items = append(items, map[string]any{
			"server": e.server,
			"_meta": map[string]any{officialMeta: map[string]any{
				"status": e.status, "statusMessage": e.statusMessage, "isLatest": e.isLatest,
				"publishedAt": e.publishedAt.Format(time.RFC3339Nano), "updatedAt": e.updatedAt.Format(time.RFC3339Nano),
			}},
		})
	}
	if fault == BadItem {
		items = append(items, map[string]any{"server": map[string]any{"name": "no slash", "version": "1.0.0"}})
	}
	meta := map[string]any{"count": len(items)}
	if next != "" {
		meta["nextCursor"] = next
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"servers": items, "metadata": meta})
}
