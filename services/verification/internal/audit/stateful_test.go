package audit

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/mcpschema"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
)

// fake25 is a raw 2025-11-25 server: correct by default, each field a defect the era must find.
type fake25 struct {
	unauthorized, initFails, refuseInit     bool
	noServerInfo, noSession, spaceInSession bool
	notify200, sse                          bool
	onlyTools, answerUndeclared             bool
	stringSchema, badName, oldDraft         bool
	toolPages                               int
	pageLoop                                bool
	nullIDErrors, parse500, acceptBatch     bool
	tool500, acceptOrigin, getJSON          bool
	anySession, echoVersion, deleteIgnored  bool

	mu       sync.Mutex
	sessions map[string]bool
	next     int
	methods  []string
}

type fakeRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Cursor          string `json:"cursor"`
		Name            string `json:"name"`
	} `json:"params"`
}

func (f *fake25) open() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

func (f *fake25) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.sessions == nil {
		f.sessions = map[string]bool{}
	}
	f.mu.Unlock()
	if f.unauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Origin") != "" && !f.acceptOrigin {
		http.Error(w, "foreign origin", http.StatusForbidden)
		return
	}
	sid := r.Header.Get(headerSession)
	switch r.Method {
	case http.MethodGet:
		if f.getJSON {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.sessions[sid] {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if !f.deleteIgnored {
			delete(f.sessions, sid)
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
		if f.acceptBatch {
			var reqs []fakeRequest
			_ = json.Unmarshal(body, &reqs)
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `[{"jsonrpc":"2.0","id":%s,"result":{}}]`, reqs[0].ID)
			return
		}
		f.write(w, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batches are not supported"}}`)
		return
	}
	var req fakeRequest
	if json.Unmarshal(body, &req) != nil {
		if f.parse500 {
			http.Error(w, "oops", http.StatusInternalServerError)
			return
		}
		f.write(w, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
		return
	}
	f.mu.Lock()
	f.methods = append(f.methods, req.Method)
	f.mu.Unlock()
	if req.Method == "initialize" {
		f.initialize(w, req)
		return
	}
	if !f.noSession && !f.anySession {
		f.mu.Lock()
		known := f.sessions[sid]
		f.mu.Unlock()
		switch {
		case sid == "":
			f.write(w, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"missing session"}}`)
			return
		case !known:
			f.write(w, http.StatusNotFound, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"session not found"}}`)
			return
		}
	}
	if req.ID == nil {
		if f.notify200 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result := ""
	switch req.Method {
	case "ping":
		result = `{}`
	case "tools/list":
		result = f.toolsPage(req.Params.Cursor)
	case "prompts/list":
		if f.onlyTools && !f.answerUndeclared {
			break
		}
		result = `{"prompts":[{"name":"greet","description":"Greets","arguments":[{"name":"who","required":true}]}]}`
	case "resources/list":
		if f.onlyTools && !f.answerUndeclared {
			break
		}
		result = `{"resources":[{"uri":"file:///readme.md","name":"readme","mimeType":"text/markdown"}]}`
	case "resources/templates/list":
		result = `{"resourceTemplates":[{"uriTemplate":"file:///{path}","name":"files"}]}`
	case "tools/call":
		if f.tool500 {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		result = fmt.Sprintf(`{"content":[{"type":"text","text":"unknown tool %s"}],"isError":true}`, req.Params.Name)
	}
	if result == "" {
		id := string(req.ID)
		if f.nullIDErrors {
			id = "null"
		}
		f.write(w, http.StatusOK, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, id))
		return
	}
	f.write(w, http.StatusOK, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result))
}

func (f *fake25) initialize(w http.ResponseWriter, req fakeRequest) {
	switch {
	case f.initFails:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	case f.refuseInit:
		f.write(w, http.StatusBadRequest, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, req.ID))
		return
	}
	version := req.Params.ProtocolVersion
	if !f.echoVersion && !slices.Contains(statefulRevisions, version) {
		version = EraStateful
	}
	if !f.noSession {
		f.mu.Lock()
		f.next++
		id := fmt.Sprintf("session-%d-%d", f.next, time.Now().UnixNano())
		if f.spaceInSession {
			id = "session " + id
		}
		f.sessions[id] = true
		f.mu.Unlock()
		w.Header().Set(headerSession, id)
	}
	caps := `{"tools":{"listChanged":true},"prompts":{},"resources":{}}`
	if f.onlyTools {
		caps = `{"tools":{}}`
	}
	info := `"serverInfo":{"name":"fake","title":"Fake server","version":"1.0.0"},`
	if f.noServerInfo {
		info = ""
	}
	f.write(w, http.StatusOK, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":%s,%s"instructions":"Use it."}}`,
		req.ID, version, caps, info))
}

// toolsPage serves toolPages pages of one tool each (one page when zero).
func (f *fake25) toolsPage(cursor string) string {
	page := 1
	if cursor != "" {
		_, _ = fmt.Sscanf(cursor, "page-%d", &page)
	}
	schema := `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`
	switch {
	case f.stringSchema:
		schema = `"object"`
	case f.oldDraft:
		schema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`
	}
	name := fmt.Sprintf("search_%d", page)
	if f.badName {
		name = "search web"
	}
	tool := fmt.Sprintf(`{"name":%q,"description":"Searches","inputSchema":%s}`, name, schema)
	next := ""
	switch {
	case f.pageLoop && page >= 2:
		next = `,"nextCursor":"page-2"`
	case page < f.toolPages:
		next = fmt.Sprintf(`,"nextCursor":"page-%d"`, page+1)
	}
	return fmt.Sprintf(`{"tools":[%s]%s}`, tool, next)
}

// write answers a JSON-RPC message, as JSON or as one event of a stream.
func (f *fake25) write(w http.ResponseWriter, status int, msg string) {
	if f.sse && status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

// testSchemas compiles the schemas once for every test: compiling is most of an audit's time.
var testSchemas = sync.OnceValues(mcpschema.Load)

// testEngine serves h over TLS and returns an engine that may audit it, and the endpoint.
func testEngine(t *testing.T, h http.Handler, limits probe.Limits) (*Engine, string) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	schemas, err := testSchemas()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{
		RootCAs: pool, Limits: limits, Schemas: schemas,
		Targets: safehttp.TargetPolicy{AllowedPorts: []int{port}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, srv.URL + "/mcp"
}

// auditStateful runs the stateful era alone against h, so that its traffic is its own.
func auditStateful(t *testing.T, h http.Handler, m mode, limits probe.Limits) (eraOutcome, map[string]Check, probe.Stats) {
	t.Helper()
	e, url := testEngine(t, h, limits)
	r, ctx, cancel, err := e.start(context.Background(), Target{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	out := r.stateful(ctx, m)
	checks := map[string]Check{}
	for _, c := range r.checks("not run") {
		checks[c.ID] = c
	}
	return out, checks, r.client.Stats()
}

// wantStatus asserts the status of checks, by id.
func wantStatus(t *testing.T, checks map[string]Check, want map[string]Status) {
	t.Helper()
	for id, status := range want {
		if c := checks[id]; c.Status != status {
			t.Errorf("%s: status %s, want %s (%s)", id, c.Status, status, c.Details)
		}
	}
}

// statefulIDs are the catalog's checks of the era.
func statefulIDs() []string {
	var ids []string
	for _, d := range Catalog {
		if d.Era == EraStateful {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

func TestStatefulCorrectServer(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			f := &fake25{sse: sse}
			out, checks, stats := auditStateful(t, f, fullAudit, probe.Limits{})
			for _, id := range statefulIDs() {
				want := Success
				if id == "undeclared-capability" {
					want = Skipped // every capability is declared
				}
				wantStatus(t, checks, map[string]Status{id: want})
			}
			if out.result.Status != EraSupported || out.result.ProtocolVersion != EraStateful {
				t.Errorf("era result %+v", out.result)
			}
			if s := out.server; s == nil || s.Name != "fake" || s.Title != "Fake server" || s.Version != "1.0.0" ||
				!slices.Equal(s.Capabilities, []string{"prompts", "resources", "tools"}) || !s.Instructions {
				t.Errorf("server %+v", out.server)
			}
			if l := out.listing; l == nil || len(l.Tools) != 1 || len(l.Prompts) != 1 || len(l.Resources) != 1 || len(l.Templates) != 1 {
				t.Errorf("listing %+v", out.listing)
			}
			if c := out.unknownTool; !c.Probed || !c.ToolError || c.JSONRPCError || c.HTTPStatus != 200 {
				t.Errorf("unknown tool contract %+v", c)
			}
			if out.headers.Get(headerSession) == "" || len(out.initLatency) != 1 {
				t.Errorf("headers %v, init latency %v", out.headers, out.initLatency)
			}
			if f.open() != 0 {
				t.Errorf("%d sessions left open", f.open())
			}
			t.Logf("%d requests: %v", stats.Requests, f.methods)
			if stats.Requests > 25 {
				t.Errorf("%d requests, want at most 25", stats.Requests)
			}
		})
	}
}

func TestStatefulConformanceReport(t *testing.T) {
	e, url := testEngine(t, &fake25{}, probe.Limits{})
	rep, err := e.Conformance(context.Background(), Target{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Eras[0].Era != EraStateful || rep.Eras[0].Status != EraSupported {
		t.Errorf("eras %+v", rep.Eras)
	}
	if rep.Server == nil || rep.Server.Name != "fake" {
		t.Errorf("server %+v", rep.Server)
	}
	for _, c := range rep.Checks {
		if c.Era == EraStateful && c.Status == Failure {
			t.Errorf("%s failed: %s", c.ID, c.Details)
		}
	}
}

func TestStatefulHandshakeFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      *fake25
		era    string
		status Status
		rest   Status
	}{
		{"unauthorized", &fake25{unauthorized: true}, EraNotSupported, Skipped, Skipped},
		{"5xx", &fake25{initFails: true}, EraBroken, Failure, Skipped},
		{"refused", &fake25{refuseInit: true}, EraNotSupported, Info, Skipped},
		{"no serverInfo", &fake25{noServerInfo: true}, EraBroken, Failure, Success},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, checks, _ := auditStateful(t, tc.f, fullAudit, probe.Limits{})
			if out.result.Status != tc.era {
				t.Errorf("era status %s, want %s (%s)", out.result.Status, tc.era, out.result.Details)
			}
			wantStatus(t, checks, map[string]Status{"server-initialize": tc.status, "ping": tc.rest})
		})
	}
	_, checks, stats := auditStateful(t, &fake25{unauthorized: true}, fullAudit, probe.Limits{})
	if stats.Requests != 1 || !strings.Contains(checks["ping"].Details, "authorization") {
		t.Errorf("a protected server: %d requests, ping %q", stats.Requests, checks["ping"].Details)
	}
}

func TestStatefulDefects(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *fake25
		want map[string]Status
	}{
		{"no session", &fake25{noSession: true}, map[string]Status{
			"session-id-format": Info, "session-missing-400": Skipped, "session-unknown-404": Skipped, "session-delete": Skipped, "ping": Success,
		}},
		{"session id with a space", &fake25{spaceInSession: true}, map[string]Status{"session-id-format": Failure}},
		{"notification answered 200", &fake25{notify200: true}, map[string]Status{"notification-accepted": Warning}},
		{"string inputSchema", &fake25{stringSchema: true}, map[string]Status{
			"tools-list": Success, "json-schema-2020-12": Failure, "message-schema": Failure, "tool-name-format": Success,
		}},
		{"draft-07 schema", &fake25{oldDraft: true}, map[string]Status{"json-schema-2020-12": Warning, "message-schema": Success}},
		{"tool name with a space", &fake25{badName: true}, map[string]Status{"tool-name-format": Failure}},
		{"three pages", &fake25{toolPages: 3}, map[string]Status{"tools-list-pagination": Success, "tools-list": Success}},
		{"endless pages", &fake25{toolPages: 9}, map[string]Status{"tools-list-pagination": Warning}},
		{"cursor loop", &fake25{toolPages: 9, pageLoop: true}, map[string]Status{"tools-list-pagination": Failure}},
		{"undeclared capabilities answered", &fake25{onlyTools: true, answerUndeclared: true}, map[string]Status{
			"undeclared-capability": Warning, "prompts-list": Skipped, "resources-list": Skipped, "resources-templates-list": Skipped,
		}},
		{"undeclared capabilities refused", &fake25{onlyTools: true}, map[string]Status{"undeclared-capability": Success}},
		{"errors with a null id", &fake25{nullIDErrors: true}, map[string]Status{"unknown-method": Failure}},
		{"parse error 500", &fake25{parse500: true}, map[string]Status{"malformed-json": Failure}},
		{"batch accepted", &fake25{acceptBatch: true}, map[string]Status{"batch-refused": Failure}},
		{"tools/call 500", &fake25{tool500: true}, map[string]Status{"unknown-tool-error": Failure}},
		{"foreign origin accepted", &fake25{acceptOrigin: true}, map[string]Status{"origin-rejected": Failure}},
		{"GET answers JSON", &fake25{getJSON: true}, map[string]Status{"get-stream": Failure}},
		{"sessions not checked", &fake25{anySession: true}, map[string]Status{"session-missing-400": Failure, "session-unknown-404": Failure}},
		{"unknown version echoed", &fake25{echoVersion: true}, map[string]Status{"version-negotiation": Failure}},
		{"DELETE ignored", &fake25{deleteIgnored: true}, map[string]Status{"session-delete": Failure}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, checks, _ := auditStateful(t, tc.f, fullAudit, probe.Limits{})
			wantStatus(t, checks, tc.want)
		})
	}
}

func TestStatefulForeignOriginSessionEnded(t *testing.T) {
	f := &fake25{acceptOrigin: true}
	auditStateful(t, f, fullAudit, probe.Limits{})
	if f.open() != 0 {
		t.Errorf("%d sessions left open", f.open())
	}
}

func TestStatefulReadiness(t *testing.T) {
	f := &fake25{}
	out, _, stats := auditStateful(t, f, readinessAudit, probe.Limits{})
	if len(out.initLatency) != latencySamples || len(out.listLatency) != latencySamples {
		t.Errorf("latency samples: %d initialize, %d tools/list", len(out.initLatency), len(out.listLatency))
	}
	if !out.unknownTool.Probed || out.listing == nil || len(out.listing.Tools) != 1 || out.protocolVersion != EraStateful {
		t.Errorf("outcome %+v", out)
	}
	if f.open() != 0 {
		t.Errorf("%d sessions left open", f.open())
	}
	t.Logf("%d requests: %v", stats.Requests, f.methods)
}

func TestStatefulBudget(t *testing.T) {
	for n := 1; n <= 20; n++ {
		_, checks, stats := auditStateful(t, &fake25{}, fullAudit, probe.Limits{MaxRequests: n})
		if stats.Requests > n {
			t.Fatalf("budget %d: %d requests", n, stats.Requests)
		}
		if n == 3 && checks["ping"].Status != Skipped {
			t.Errorf("budget 3: ping %s", checks["ping"].Status)
		}
	}
}

// fixtureEngine serves an audittest fixture and returns an engine that may audit it, and the target.
func fixtureEngine(t *testing.T, ca *audittest.CA, h http.Handler, token string, limits probe.Limits) (*Engine, Target) {
	t.Helper()
	srv := ca.Serve(h)
	t.Cleanup(srv.Close)
	schemas, err := testSchemas()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{
		RootCAs: ca.Pool(), Schemas: schemas, Limits: limits,
		Targets: safehttp.TargetPolicy{AllowedPorts: []int{srv.Port}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	target := Target{URL: srv.URL}
	if token != "" {
		target.Headers = map[string]string{"Authorization": "Bearer " + token}
	}
	return e, target
}

// fixtureChecks audits an audittest fixture in full and returns the era's result and checks.
func fixtureChecks(t *testing.T, ca *audittest.CA, h http.Handler, token string, limits probe.Limits) (EraResult, map[string]Check) {
	t.Helper()
	e, target := fixtureEngine(t, ca, h, token, limits)
	rep, err := e.Conformance(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]Check{}
	for _, c := range rep.Checks {
		if c.Era == EraStateful {
			checks[c.ID] = c
		}
	}
	return rep.Eras[0], checks
}

// fixtureWant is every check of the era SUCCESS but those of skipped.
func fixtureWant(skipped ...string) map[string]Status {
	want := map[string]Status{}
	for _, id := range statefulIDs() {
		want[id] = Success
	}
	for _, id := range skipped {
		want[id] = Skipped
	}
	return want
}

func TestStatefulFixtures(t *testing.T) {
	ca, err := audittest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	listables := []string{"prompts-list", "resources-list", "resources-templates-list"}
	for _, tc := range []struct {
		name  string
		h     http.Handler
		token string
		want  map[string]Status
	}{
		{"Correct", audittest.Correct(), "", fixtureWant(listables...)},
		// Full declares tools, prompts and resources: no capability is left to probe undeclared.
		{"Full", audittest.Full(), "", fixtureWant("undeclared-capability")},
		{"Dual", audittest.Dual(), "", fixtureWant(listables...)},
		{"Protected", audittest.Protected("s3cret"), "s3cret", fixtureWant(listables...)},
		{"Protected without its token", audittest.Protected("s3cret"), "", fixtureWant(statefulIDs()...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, checks := fixtureChecks(t, ca, tc.h, tc.token, probe.Limits{})
			wantStatus(t, checks, tc.want)
		})
	}
	for _, d := range audittest.Defects() {
		if def, ok := catalogIndex(d.Check); !ok || def.Era != EraStateful {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			want := fixtureWant(listables...)
			want[d.Check] = Status(d.Status)
			for _, id := range d.Also {
				want[id] = Failure
			}
			_, checks := fixtureChecks(t, ca, d.Handler(), d.Token, probe.Limits{})
			wantStatus(t, checks, want)
		})
	}
}

func TestStatefulAbuse(t *testing.T) {
	ca, err := audittest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	limits := probe.Limits{RequestTimeout: 300 * time.Millisecond, MaxResponseBytes: 64 << 10}
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"stream forever", audittest.StreamForever()},
		{"huge", audittest.Huge(1 << 20)},
		{"slow", audittest.Slow(time.Second, audittest.Correct())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			era, checks := fixtureChecks(t, ca, tc.h, "", limits)
			if era.Status != EraBroken || checks["server-initialize"].Status != Failure {
				t.Errorf("era %+v, server-initialize %+v", era, checks["server-initialize"])
			}
			if c := checks["ping"]; c.Status != Skipped {
				t.Errorf("ping %+v", c)
			}
		})
	}
}

func TestStatefulReadinessFixture(t *testing.T) {
	ca, err := audittest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	e, target := fixtureEngine(t, ca, audittest.Correct(), "", probe.Limits{})
	r, ctx, cancel, err := e.start(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	out := r.stateful(ctx, readinessAudit)
	if len(out.initLatency) != latencySamples || len(out.listLatency) != latencySamples {
		t.Errorf("latency samples: %d initialize, %d tools/list", len(out.initLatency), len(out.listLatency))
	}
	if c := out.unknownTool; !c.Probed || !(c.JSONRPCError || c.ToolError) {
		t.Errorf("unknown tool contract %+v", c)
	}
	if out.listing == nil || len(out.listing.Tools) != 3 || out.server == nil || out.server.Name != audittest.ServerName {
		t.Errorf("listing %+v, server %+v", out.listing, out.server)
	}
}
