package audit

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/mcpschema"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
)

// The tests of this file and httpsurface_test.go audit rigMCP, a raw MCP server over TLS on
// loopback whose every behaviour the audit judges is a field, so that each defect is one line.

// rigDoc is a document rigMCP serves at a GET path; "{origin}" in its body stands for the server's
// own https origin, and "{as}" for rigMCP.as.
type rigDoc struct {
	status int
	ctype  string
	body   string
}

// rigMCP is an MCP server speaking 2025-11-25 with sessions (era2025), 2026-07-28 (era2026), both or
// neither, with optional defects.
type rigMCP struct {
	era2025, era2026 bool
	// token, when set, is the bearer token every POST needs; challenge is the WWW-Authenticate of
	// the 401 otherwise ("" sends none), with "{origin}" and "{as}" as in docs.
	token, challenge string
	// docs are served at their GET paths; as replaces "{as}" in them.
	docs map[string]rigDoc
	as   string
	// caps are the 2026 capabilities; nil means tools and prompts. toolPages is how many pages
	// tools/list has (1 when 0).
	caps      map[string]any
	toolPages int

	// Defects of the 2026 era.
	acceptAnyVersion   bool   // answers any protocol version
	versionStatus      int    // the HTTP status of -32022 (400 when 0)
	ignoreMethodHeader bool   // does not compare Mcp-Method with the body
	mismatchStatus     int    // the HTTP status of -32020 (400 when 0)
	requireSession     bool   // refuses the lists without a session, as a 2025 server does
	discover           string // a raw result for server/discover, replacing the correct one
	discoverStatus     int    // an HTTP status for server/discover, replacing 200
	tools              string // a raw result for tools/list, replacing the correct pages

	mu       sync.Mutex
	sessions map[string]bool
	deletes  int
	leaked   []string // Authorization headers that reached a GET of a document (fetched without them)
}

func (m *rigMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin := "https://" + r.Host
	switch r.Method {
	case http.MethodGet:
		m.mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" && r.URL.Path != "/mcp" {
			m.leaked = append(m.leaked, r.URL.Path+": "+a)
		}
		m.mu.Unlock()
		d, ok := m.docs[r.URL.Path]
		if !ok {
			if r.URL.Path == "/mcp" {
				http.Error(w, "", http.StatusMethodNotAllowed)
				return
			}
			http.NotFound(w, r)
			return
		}
		if d.ctype == "" {
			d.ctype = "application/json"
		}
		if d.status == 0 {
			d.status = http.StatusOK
		}
		w.Header().Set("Content-Type", d.ctype)
		w.WriteHeader(d.status)
		_, _ = io.WriteString(w, strings.NewReplacer("{origin}", origin, "{as}", m.as).Replace(d.body))
		return
	case http.MethodDelete:
		m.mu.Lock()
		defer m.mu.Unlock()
		sid := r.Header.Get("Mcp-Session-Id")
		if !m.sessions[sid] {
			http.NotFound(w, r)
			return
		}
		delete(m.sessions, sid)
		m.deletes++
		return
	case http.MethodPost:
	default:
		http.Error(w, "", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	if m.token != "" && r.Header.Get("Authorization") != "Bearer "+m.token {
		if m.challenge != "" {
			w.Header().Set("WWW-Authenticate", strings.NewReplacer("{origin}", origin, "{as}", m.as).Replace(m.challenge))
		}
		rigError(w, http.StatusUnauthorized, nil, -32001, "unauthorized", nil)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta   map[string]json.RawMessage `json:"_meta"`
			Cursor string                     `json:"cursor"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &req) != nil {
		rigError(w, http.StatusBadRequest, nil, -32700, "parse error", nil)
		return
	}
	if _, stateless := req.Params.Meta[metaProtocolVersion]; stateless && m.era2026 {
		m.serve2026(w, r, req.ID, req.Method, req.Params.Meta, req.Params.Cursor)
		return
	}
	m.serve2025(w, r, req.ID, req.Method)
}

// serve2026 answers a request of the 2026-07-28 era.
func (m *rigMCP) serve2026(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string, meta map[string]json.RawMessage, cursor string) {
	var version string
	_ = json.Unmarshal(meta[metaProtocolVersion], &version)
	if !m.ignoreMethodHeader && r.Header.Get("Mcp-Method") != method || r.Header.Get("Mcp-Protocol-Version") != version {
		rigError(w, rigOr(m.mismatchStatus, http.StatusBadRequest), id, -32020, "header mismatch", nil)
		return
	}
	if version != EraStateless && !m.acceptAnyVersion {
		rigError(w, rigOr(m.versionStatus, http.StatusBadRequest), id, -32022, "unsupported protocol version",
			map[string]any{"requested": version, "supported": []string{EraStateless, EraStateful}})
		return
	}
	if m.requireSession && method != "server/discover" {
		rigError(w, http.StatusBadRequest, id, -32000, "Bad Request: No valid session ID provided", nil)
		return
	}
	page := func(key string, items any, next string) map[string]any {
		res := map[string]any{"resultType": "complete", "cacheScope": "public", "ttlMs": 0, key: items}
		if next != "" {
			res["nextCursor"] = next
		}
		return res
	}
	switch method {
	case "server/discover":
		if m.discover != "" {
			rigResult(w, rigOr(m.discoverStatus, http.StatusOK), id, json.RawMessage(m.discover))
			return
		}
		caps := m.caps
		if caps == nil {
			caps = map[string]any{"tools": map[string]any{}, "prompts": map[string]any{}}
		}
		rigResult(w, rigOr(m.discoverStatus, http.StatusOK), id, map[string]any{
			"resultType": "complete", "cacheScope": "public", "ttlMs": 60000,
			"supportedVersions": []string{EraStateless, EraStateful}, "capabilities": caps,
			"instructions": "a test server",
			"_meta":        map[string]any{metaServerInfo: map[string]any{"name": "rig", "version": "1.0.0"}},
		})
	case "tools/list":
		if m.tools != "" {
			rigResult(w, http.StatusOK, id, json.RawMessage(m.tools))
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(cursor, "page-"))
		next := ""
		if n+1 < max(1, m.toolPages) {
			next = "page-" + strconv.Itoa(n+1)
		}
		tool := map[string]any{"name": "echo_" + strconv.Itoa(n), "inputSchema": map[string]any{"type": "object"}}
		rigResult(w, http.StatusOK, id, page("tools", []any{tool}, next))
	case "prompts/list":
		rigResult(w, http.StatusOK, id, page("prompts", []any{map[string]any{"name": "greet"}}, ""))
	case "resources/list":
		rigResult(w, http.StatusOK, id, page("resources", []any{map[string]any{"uri": "file:///a", "name": "a"}}, ""))
	default:
		rigError(w, http.StatusOK, id, -32601, "method not found", nil)
	}
}

// serve2025 answers a request without _meta: the 2025-11-25 era with sessions when era2025, a
// refusal otherwise.
func (m *rigMCP) serve2025(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
	if !m.era2025 {
		rigError(w, http.StatusOK, id, -32601, "method not found", nil)
		return
	}
	if method == "initialize" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		sid := hex.EncodeToString(b)
		m.mu.Lock()
		if m.sessions == nil {
			m.sessions = map[string]bool{}
		}
		m.sessions[sid] = true
		m.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		rigResult(w, http.StatusOK, id, map[string]any{
			"protocolVersion": EraStateful, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "rig", "version": "1.0.0"},
		})
		return
	}
	m.mu.Lock()
	known := m.sessions[r.Header.Get("Mcp-Session-Id")]
	m.mu.Unlock()
	switch {
	case r.Header.Get("Mcp-Session-Id") == "":
		rigError(w, http.StatusBadRequest, id, -32000, "Bad Request: No valid session ID provided", nil)
	case !known:
		rigError(w, http.StatusNotFound, id, -32001, "Session not found", nil)
	case id == nil:
		w.WriteHeader(http.StatusAccepted)
	case method == "tools/list":
		rigResult(w, http.StatusOK, id, map[string]any{"tools": []any{map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}})
	case method == "ping":
		rigResult(w, http.StatusOK, id, map[string]any{})
	default:
		rigError(w, http.StatusOK, id, -32601, "method not found", nil)
	}
}

func rigOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func rigResult(w http.ResponseWriter, status int, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func rigError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}

// rigServe serves h over TLS on loopback until the test ends.
func rigServe(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// rigEngine is an engine that trusts the test certificate and may reach the ports of allowed (on
// loopback), with a budget that the other era's probes cannot spend for the era under test.
func rigEngine(t *testing.T, allowed ...*httptest.Server) *Engine {
	t.Helper()
	pool := x509.NewCertPool()
	var ports []int
	for _, s := range allowed {
		pool.AddCert(s.Certificate())
		u, _ := url.Parse(s.URL)
		p, _ := strconv.Atoi(u.Port())
		ports = append(ports, p)
	}
	e, err := New(Config{
		RootCAs:  pool,
		Targets:  safehttp.TargetPolicy{AllowedPorts: ports, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Limits:   probe.Limits{MaxRequests: 200},
		Schemas:  rigSchemas(t),
		Deadline: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// rigSchemaSet is compiled once for all the tests (about 70 ms each time).
var rigSchemaSet = sync.OnceValues(mcpschema.Load)

func rigSchemas(t *testing.T) *mcpschema.Set {
	t.Helper()
	s, err := rigSchemaSet()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rigAudit runs a conformance audit of srv's /mcp with headers.
func rigAudit(t *testing.T, e *Engine, srv *httptest.Server, headers map[string]string) *Report {
	t.Helper()
	rep, err := e.Conformance(context.Background(), Target{URL: srv.URL + "/mcp", Headers: headers})
	if err != nil {
		t.Fatalf("Conformance: %v", err)
	}
	return rep
}

// rigRun starts a run against srv's /mcp for tests that call one part of the audit.
func rigRun(t *testing.T, e *Engine, srv *httptest.Server, headers map[string]string) (*run, context.Context) {
	t.Helper()
	r, ctx, cancel, err := e.start(context.Background(), Target{URL: srv.URL + "/mcp", Headers: headers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return r, ctx
}

// rigCheck returns the result of check id.
func rigCheck(t *testing.T, checks []Check, id string) Check {
	t.Helper()
	for _, c := range checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s in the report", id)
	return Check{}
}

// rigWant asserts the status of check id, and that its details contain each of contains.
func rigWant(t *testing.T, checks []Check, id string, want Status, contains ...string) {
	t.Helper()
	c := rigCheck(t, checks, id)
	if c.Status != want {
		t.Errorf("%s: got %s, want %s (details: %s)", id, c.Status, want, c.Details)
		return
	}
	for _, s := range contains {
		if !strings.Contains(c.Details, s) {
			t.Errorf("%s: details %q do not contain %q", id, c.Details, s)
		}
	}
}

var rigStatelessChecks = []string{"server-discover", "stateless-tools-list", "unsupported-version", "header-mismatch", "stateless-message-schema"}

func TestStatelessCorrectServer(t *testing.T) {
	t.Parallel()
	for name, m := range map[string]*rigMCP{
		"2026 only": {era2026: true},
		"both eras": {era2025: true, era2026: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := rigServe(t, m)
			rep := rigAudit(t, rigEngine(t, srv), srv, nil)
			for _, id := range rigStatelessChecks {
				rigWant(t, rep.Checks, id, Success)
			}
			era := rep.Eras[1]
			if era.Era != EraStateless || era.Status != EraSupported || era.ProtocolVersion != EraStateless {
				t.Errorf("era: got %+v, want 2026-07-28 supported", era)
			}
			rigWant(t, rep.Checks, "server-discover", Success, "server rig 1.0.0", "capabilities: prompts, tools")
		})
	}
}

func TestStatelessOutcome(t *testing.T) {
	t.Parallel()
	m := &rigMCP{era2026: true, toolPages: 3, caps: map[string]any{"tools": map[string]any{}, "prompts": map[string]any{}, "resources": map[string]any{}, "logging": map[string]any{}}}
	srv := rigServe(t, m)
	r, ctx := rigRun(t, rigEngine(t, srv), srv, nil)
	out := r.stateless(ctx)

	if out.listing == nil {
		t.Fatal("no listing")
	}
	var names []string
	for _, tool := range out.listing.Tools {
		names = append(names, tool.Name)
	}
	if got, want := strings.Join(names, ","), "echo_0,echo_1,echo_2"; got != want {
		t.Errorf("tools: got %s, want %s", got, want)
	}
	if len(out.listing.Prompts) != 1 || len(out.listing.Resources) != 1 {
		t.Errorf("prompts, resources: got %d, %d, want 1, 1", len(out.listing.Prompts), len(out.listing.Resources))
	}
	if out.server == nil || out.server.Name != "rig" || out.server.Version != "1.0.0" || !out.server.Instructions {
		t.Errorf("server: got %+v", out.server)
	}
	if got, want := strings.Join(out.server.Capabilities, ","), "logging,prompts,resources,tools"; got != want {
		t.Errorf("capabilities: got %s, want %s", got, want)
	}
	if out.protocolVersion != EraStateless || out.headers.Get("Content-Type") != "application/json" {
		t.Errorf("protocol version %q, headers %v", out.protocolVersion, out.headers)
	}
	// server/discover, three pages of tools, prompts, resources, the bogus version, the mismatch.
	if got := r.client.Stats().Requests; got != 8 {
		t.Errorf("requests: got %d, want 8", got)
	}
	checks := r.checks("not run")
	rigWant(t, checks, "stateless-tools-list", Success, "3 tools in 3 page(s)")
	rigWant(t, checks, "stateless-message-schema", Success, "8 messages valid")
}

func TestStatelessNotSupported(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		m    *rigMCP
		want string
	}{
		// A 2025 server with sessions refuses server/discover without one.
		"sessions": {&rigMCP{era2025: true}, "No valid session ID"},
		// A sessionless server of an older revision does not know the method.
		"method not found": {&rigMCP{}, "-32601"},
		// A server that answers server/discover but lists other versions.
		"other versions": {&rigMCP{era2026: true, discover: `{"resultType":"complete","cacheScope":"public","ttlMs":0,"supportedVersions":["2027-01-01"],"capabilities":{}}`}, "lists only 2027-01-01"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := rigServe(t, tc.m)
			rep := rigAudit(t, rigEngine(t, srv), srv, nil)
			if era := rep.Eras[1]; era.Status != EraNotSupported {
				t.Errorf("era: got %+v, want not_supported", era)
			}
			rigWant(t, rep.Checks, "server-discover", Info, "does not speak 2026-07-28", tc.want)
			for _, id := range rigStatelessChecks[1:] {
				rigWant(t, rep.Checks, id, Skipped, "the server does not support 2026-07-28")
			}
		})
	}
}

func TestStatelessUnauthorized(t *testing.T) {
	t.Parallel()
	m := &rigMCP{era2026: true, token: "s3cret-token", challenge: `Bearer realm="mcp"`}
	srv := rigServe(t, m)
	e := rigEngine(t, srv)

	rep := rigAudit(t, e, srv, nil)
	if era := rep.Eras[1]; era.Status != EraNotSupported || !strings.Contains(era.Details, "requires authorization") {
		t.Errorf("era without credentials: got %+v, want not_supported for authorization", era)
	}
	rigWant(t, rep.Checks, "server-discover", Skipped, "HTTP 401", "Authorization header")
	rigWant(t, rep.Checks, "header-mismatch", Skipped, "requires authorization")

	rep = rigAudit(t, e, srv, map[string]string{"Authorization": "Bearer s3cret-token"})
	for _, id := range rigStatelessChecks {
		rigWant(t, rep.Checks, id, Success)
	}
}

func TestStatelessDefects(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		m       *rigMCP
		id      string
		want    Status
		details []string
	}{
		"any version accepted":   {&rigMCP{era2026: true, acceptAnyVersion: true}, "unsupported-version", Failure, []string{"was accepted"}},
		"version refused 500":    {&rigMCP{era2026: true, versionStatus: 500}, "unsupported-version", Failure, []string{"HTTP 500"}},
		"version refused 200":    {&rigMCP{era2026: true, versionStatus: 200}, "unsupported-version", Warning, []string{"HTTP 200"}},
		"header ignored":         {&rigMCP{era2026: true, ignoreMethodHeader: true}, "header-mismatch", Failure, []string{"was accepted"}},
		"mismatch refused 422":   {&rigMCP{era2026: true, mismatchStatus: 422}, "header-mismatch", Warning, []string{"HTTP 422"}},
		"session required":       {&rigMCP{era2026: true, requireSession: true}, "stateless-tools-list", Failure, []string{"ask for a session"}},
		"discover 500":           {&rigMCP{era2026: true, discoverStatus: 500}, "server-discover", Failure, []string{"HTTP 500"}},
		"discover lacks ttlMs":   {&rigMCP{era2026: true, discover: `{"resultType":"complete","cacheScope":"public","supportedVersions":["2026-07-28"],"capabilities":{}}`}, "server-discover", Failure, []string{"lacks ttlMs"}},
		"discover not an object": {&rigMCP{era2026: true, discover: `["2026-07-28"]`}, "server-discover", Failure, []string{"lacks cacheScope"}},
		"discover off the schema": {&rigMCP{era2026: true, discover: `{"resultType":"complete","cacheScope":"everyone","ttlMs":-1,"supportedVersions":["2026-07-28"],"capabilities":{}}`},
			"server-discover", Failure, []string{"does not validate", "DiscoverResultResponse"}},
		"tools off the schema": {&rigMCP{era2026: true, tools: `{"resultType":"complete","ttlMs":0,"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`},
			"stateless-tools-list", Failure, []string{"cacheScope"}},
		"tools without resultType": {&rigMCP{era2026: true, tools: `{"cacheScope":"public","ttlMs":0,"tools":[]}`},
			"stateless-tools-list", Failure, []string{"lacks resultType"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := rigServe(t, tc.m)
			rep := rigAudit(t, rigEngine(t, srv), srv, nil)
			rigWant(t, rep.Checks, tc.id, tc.want, tc.details...)
			if tc.id == "server-discover" {
				if era := rep.Eras[1]; era.Status != EraBroken {
					t.Errorf("era: got %+v, want broken", era)
				}
				for _, id := range rigStatelessChecks[1:] {
					rigWant(t, rep.Checks, id, Skipped, "server/discover did not answer")
				}
			}
		})
	}
}

func TestStatelessSchemaDefinitions(t *testing.T) {
	t.Parallel()
	set := rigSchemas(t)
	defs := []string{"JSONRPCErrorResponse", "JSONRPCNotification", "JSONRPCMessage", "UnsupportedProtocolVersionError", "HeaderMismatchError"}
	for _, d := range statelessResultDefs {
		defs = append(defs, d)
	}
	for _, d := range defs {
		if !set.Has(EraStateless, d) {
			t.Errorf("the 2026-07-28 schema has no definition %s", d)
		}
	}
}

func TestStatelessMessageSchemaFailure(t *testing.T) {
	t.Parallel()
	// prompts/list answers a result without cacheScope: only the schema check sees it.
	m := &rigMCP{era2026: true}
	srv := rigServe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "prompts/list" && r.Header.Get("Mcp-Protocol-Version") == EraStateless {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			body, _ := io.ReadAll(r.Body)
			if json.Unmarshal(body, &req) == nil && req.Method == "prompts/list" {
				rigResult(w, http.StatusOK, req.ID, map[string]any{"resultType": "complete", "ttlMs": 0, "prompts": []any{}})
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		m.ServeHTTP(w, r)
	}))
	r, ctx := rigRun(t, rigEngine(t, srv), srv, nil)
	r.stateless(ctx)
	checks := r.checks("not run")
	rigWant(t, checks, "stateless-tools-list", Success)
	rigWant(t, checks, "stateless-message-schema", Failure, "1 of 5 messages", "prompts/list: ListPromptsResultResponse", "cacheScope")
}

// rigFixtureEngine is an engine for audittest fixtures of ca on port.
func rigFixtureEngine(t *testing.T, ca *audittest.CA, port int) *Engine {
	t.Helper()
	e, err := New(Config{
		RootCAs:  ca.Pool(),
		Targets:  safehttp.TargetPolicy{AllowedPorts: []int{port}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Schemas:  rigSchemas(t),
		Deadline: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestStatelessAndSurfaceFixtures audits the shared fixtures: the statuses of the checks of this era
// and of the HTTP surface for each correct server, and each defect those checks must find.
func TestStatelessAndSurfaceFixtures(t *testing.T) {
	t.Parallel()
	ca, err := audittest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	audit := func(t *testing.T, h http.Handler, token string) *Report {
		srv := ca.Serve(h)
		t.Cleanup(srv.Close)
		var headers map[string]string
		if token != "" {
			headers = map[string]string{"Authorization": "Bearer " + token}
		}
		rep, err := rigFixtureEngine(t, ca, srv.Port).Conformance(context.Background(), Target{URL: srv.URL, Headers: headers})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	all := func(s Status) map[string]Status {
		m := map[string]Status{}
		for _, id := range rigStatelessChecks {
			m[id] = s
		}
		return m
	}
	with := func(m map[string]Status, kv ...any) map[string]Status {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(Status)
		}
		return m
	}
	const token = "fixture-token-0123"
	for name, tc := range map[string]struct {
		h     http.Handler
		token string
		era   string
		want  map[string]Status
	}{
		"stateless": {audittest.Stateless(), "", EraSupported, with(all(Success),
			"oauth-protected-resource", Info, "oauth-authorization-server", Skipped, "server-card", Success)},
		"dual": {audittest.Dual(), "", EraSupported, with(all(Success),
			"oauth-protected-resource", Info, "oauth-authorization-server", Skipped, "server-card", Success)},
		"2025 only": {audittest.Correct(), "", EraNotSupported, with(all(Skipped), "server-discover", Info,
			"oauth-protected-resource", Info, "oauth-authorization-server", Skipped, "server-card", Success)},
		"protected": {audittest.Protected(token), token, EraNotSupported, with(all(Skipped), "server-discover", Info,
			"oauth-protected-resource", Success, "oauth-authorization-server", Success, "server-card", Success)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rep := audit(t, tc.h, tc.token)
			if got := rep.Eras[1].Status; got != tc.era {
				t.Errorf("era 2026-07-28: got %s, want %s (%s)", got, tc.era, rep.Eras[1].Details)
			}
			for id, want := range tc.want {
				rigWant(t, rep.Checks, id, want)
			}
		})
	}
	mine := map[string]bool{"oauth-protected-resource": true, "oauth-authorization-server": true, "server-card": true}
	for _, id := range rigStatelessChecks {
		mine[id] = true
	}
	for _, d := range audittest.Defects() {
		if !mine[d.Check] {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			rep := audit(t, d.Handler(), d.Token)
			rigWant(t, rep.Checks, d.Check, Status(d.Status))
			for _, id := range d.Also {
				if mine[id] {
					rigWant(t, rep.Checks, id, Failure)
				}
			}
		})
	}
}
