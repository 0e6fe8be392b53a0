package audittest

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalog is the ids of audit.Catalog, read from its source rather than imported: package audit
// is being built alongside these fixtures, and the fixtures' tests should not stop compiling
// whenever it is mid-change.
var catalog = func() []string {
	b, err := os.ReadFile("../catalog.go")
	if err != nil {
		panic(err)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`(?m)^\s*\{"([a-z0-9-]+)", "`).FindAllSubmatch(b, -1) {
		ids = append(ids, string(m[1]))
	}
	if len(ids) < 20 {
		panic("cannot read the catalog's ids from ../catalog.go")
	}
	return ids
}()

// fixtureCA is one CA for the whole package's tests: key generation is the slow part.
var fixtureCA = func() *CA {
	ca, err := NewCA()
	if err != nil {
		panic(err)
	}
	return ca
}()

func serve(t *testing.T, h http.Handler) *Server {
	t.Helper()
	s := fixtureCA.Serve(h)
	t.Cleanup(s.Close)
	return s
}

// Checks a fixture skips for want of the feature, per kind of correct fixture.
var (
	skip2026      = []string{"server-discover", "stateless-tools-list", "unsupported-version", "header-mismatch", "stateless-message-schema"}
	skipOAuth     = []string{"oauth-protected-resource", "oauth-authorization-server"}
	skipListables = []string{"prompts-list", "resources-list", "resources-templates-list"}
	skip2025      = []string{"server-initialize", "version-negotiation", "notification-accepted", "session-id-format",
		"session-missing-400", "session-unknown-404", "session-delete", "get-stream", "tools-list", "tool-name-format",
		"tools-list-pagination", "json-schema-2020-12", "prompts-list", "resources-list", "resources-templates-list",
		"undeclared-capability", "ping", "unknown-method", "malformed-json", "batch-refused", "unknown-tool-error",
		"origin-rejected", "message-schema"}
)

// want is every catalog check SUCCESS but the skipped ones.
func want(skipped ...[]string) map[string]string {
	w := map[string]string{}
	for _, id := range catalog {
		w[id] = pass
	}
	for _, ids := range skipped {
		for _, id := range ids {
			w[id] = skip
		}
	}
	return w
}

func compare(t *testing.T, got, why, exp map[string]string) {
	t.Helper()
	for _, id := range catalog {
		if got[id] != exp[id] {
			t.Errorf("%s: got %s, want %s (%s)", id, got[id], exp[id], why[id])
		}
	}
	for id := range got {
		if _, ok := exp[id]; !ok {
			t.Errorf("the test auditor reports %s, which is not in the catalog", id)
		}
	}
}

// TestCorrectFixtures audits every correct fixture: no check fails, only the checks of features
// the fixture lacks are skipped, and no readiness rule fires.
func TestCorrectFixtures(t *testing.T) {
	cases := []struct {
		name    string
		handler http.Handler
		token   string
		want    map[string]string
	}{
		{"Correct", Correct(), "", want(skipListables, skip2026, skipOAuth)},
		{"Full", Full(), "", want(skip2026, skipOAuth)},
		{"raw 2025", rawHandler(defects{}, true, false), "", want(skipListables, skip2026, skipOAuth)},
		{"Dual", Dual(), "", want(skipListables, skipOAuth)},
		{"Stateless", Stateless(), "", want(skip2025, skipOAuth)},
		{"Protected", Protected("s3cret"), "s3cret", want(skipListables, skip2026)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, tc.handler)
			c := newClient(t, fixtureCA, s.URL, tc.token)
			got, why := audit(c)
			compare(t, got, why, tc.want)
			if rules := readiness(newClient(t, fixtureCA, s.URL, tc.token)); len(rules) > 0 {
				t.Errorf("readiness rules fire on a correct fixture: %v", rules)
			}
		})
	}
}

// TestDefects audits every defect: its check reports its status (and the checks in Also fail),
// every other check reports what the matching correct fixture reports, and exactly its readiness
// rule fires. Each defect is also shown with a raw request, so that the test auditor's reading is
// not the only evidence.
func TestDefects(t *testing.T) {
	inCatalog := map[string]bool{}
	for _, id := range catalog {
		inCatalog[id] = true
	}
	names := map[string]bool{}
	for _, d := range Defects() {
		if names[d.Name] {
			t.Errorf("defect %s listed twice", d.Name)
		}
		names[d.Name] = true
		if d.Check != "" && !inCatalog[d.Check] {
			t.Errorf("defect %s: check %q is not in the catalog", d.Name, d.Check)
		}
		if d.Check == "" && d.Rule == "" {
			t.Errorf("defect %s names neither a check nor a rule", d.Name)
		}
		if d.Check != "" && d.Status != fail && d.Status != warn {
			t.Errorf("defect %s: status %q", d.Name, d.Status)
		}
		if shows[d.Name] == nil {
			t.Errorf("defect %s has no raw demonstration in shows", d.Name)
		}
	}

	for _, d := range Defects() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, d.Handler())
			exp := want(skipListables, skipOAuth)
			if !strings.HasPrefix(d.Name, "stateless-") {
				exp = want(skipListables, skipOAuth, skip2026)
			}
			if d.Token != "" {
				exp = want(skipListables, skip2026)
			}
			if d.Check != "" {
				exp[d.Check] = d.Status
			}
			for _, id := range d.Also {
				exp[id] = fail
			}
			got, why := audit(newClient(t, fixtureCA, s.URL, d.Token))
			compare(t, got, why, exp)

			var wantRules []string
			if d.Rule != "" {
				wantRules = []string{d.Rule}
			}
			if rules := readiness(newClient(t, fixtureCA, s.URL, d.Token)); !slices.Equal(rules, wantRules) {
				t.Errorf("readiness rules %v, want %v", rules, wantRules)
			}

			if show := shows[d.Name]; show != nil {
				show(t, newClient(t, fixtureCA, s.URL, d.Token))
			}
		})
	}
}

// shows demonstrates each defect with raw requests.
var shows = map[string]func(*testing.T, *client){
	"notification-200": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.notify("notifications/initialized", sessionHeaders(sid)); r.status != http.StatusOK || string(r.body) != "{}" {
			t.Errorf("notifications/initialized: %s", r)
		}
	},
	"session-id-control-chars": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if !strings.HasPrefix(sid, "sess ") {
			t.Errorf("session id %q", sid)
		}
		if r := c.request(version2025, "ping", nil, sessionHeaders(sid)); r.status != http.StatusOK {
			t.Errorf("the session does not work: %s", r)
		}
	},
	"missing-session-accepted": func(t *testing.T, c *client) {
		c.session2025()
		if r := c.request(version2025, "tools/list", nil, nil); r.status != http.StatusOK || r.result()["tools"] == nil {
			t.Errorf("tools/list without a session: %s", r)
		}
	},
	"unknown-session-accepted": func(t *testing.T, c *client) {
		if r := c.request(version2025, "tools/list", nil, sessionHeaders("never-issued")); r.status != http.StatusOK {
			t.Errorf("tools/list with an unknown session: %s", r)
		}
	},
	"delete-ignored": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.send(http.MethodDelete, "", sessionHeaders(sid)); r.status != http.StatusOK {
			t.Errorf("DELETE: %s", r)
		}
		if r := c.request(version2025, "ping", nil, sessionHeaders(sid)); r.status != http.StatusOK {
			t.Errorf("ping after DELETE: %s", r)
		}
	},
	"get-stream-500": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if status, _ := c.getStream(sid); status != http.StatusInternalServerError {
			t.Errorf("GET: %d", status)
		}
	},
	"version-echo": func(t *testing.T, c *client) {
		r := c.request(version2025, "initialize", initParams("1999-01-01"), nil)
		if r.result()["protocolVersion"] != "1999-01-01" {
			t.Errorf("initialize 1999-01-01: %s", r)
		}
	},
	"initialize-missing-serverinfo": func(t *testing.T, c *client) {
		if _, r := c.session2025(); r.result() == nil || r.result()["serverInfo"] != nil {
			t.Errorf("initialize: %s", r)
		}
	},
	"bad-tool-name": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "tools/list", nil, sessionHeaders(sid)); !strings.Contains(string(r.body), `"name":"get weather!"`) {
			t.Errorf("tools/list: %s", r)
		}
	},
	"cursor-loop": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		first := c.request(version2025, "tools/list", nil, sessionHeaders(sid)).result()["nextCursor"]
		second := c.request(version2025, "tools/list", map[string]any{"cursor": first}, sessionHeaders(sid)).result()["nextCursor"]
		if first == nil || first != second {
			t.Errorf("cursors %v then %v", first, second)
		}
	},
	"prompts-declared-missing": func(t *testing.T, c *client) {
		sid, init := c.session2025()
		caps, _ := init.result()["capabilities"].(map[string]any)
		if r := c.request(version2025, "prompts/list", nil, sessionHeaders(sid)); caps["prompts"] == nil || r.errorCode() != codeMethodNotFound {
			t.Errorf("capabilities %v; prompts/list: %s", caps, r)
		}
	},
	"undeclared-prompts-served": func(t *testing.T, c *client) {
		sid, init := c.session2025()
		caps, _ := init.result()["capabilities"].(map[string]any)
		if r := c.request(version2025, "prompts/list", nil, sessionHeaders(sid)); caps["prompts"] != nil || r.result()["prompts"] == nil {
			t.Errorf("capabilities %v; prompts/list: %s", caps, r)
		}
	},
	"ping-error": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "ping", nil, sessionHeaders(sid)); r.errorCode() == 0 {
			t.Errorf("ping: %s", r)
		}
	},
	"unknown-method-wrong-code": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "no/such", nil, sessionHeaders(sid)); r.errorCode() != codeInternalError {
			t.Errorf("unknown method: %s", r)
		}
	},
	"error-id-null": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "no/such", nil, sessionHeaders(sid)); !strings.Contains(string(r.body), `"id":null`) {
			t.Errorf("unknown method: %s", r)
		}
	},
	"malformed-json-500": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.send(http.MethodPost, "{oops", sessionHeaders(sid)); r.status != http.StatusInternalServerError || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Errorf("malformed JSON: %s", r)
		}
	},
	"batch-accepted": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		r := c.send(http.MethodPost, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, sessionHeaders(sid))
		var out []map[string]any
		if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil || len(out) != 2 {
			t.Errorf("batch: %s", r)
		}
	},
	"origin-ignored": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		h := sessionHeaders(sid)
		h["Origin"] = "https://evil.example"
		if r := c.request(version2025, "ping", nil, h); r.status != http.StatusOK {
			t.Errorf("foreign Origin: %s", r)
		}
	},
	"unknown-tool-500": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "tools/call", map[string]any{"name": "nope"}, sessionHeaders(sid)); r.status != http.StatusInternalServerError {
			t.Errorf("unknown tool: %s", r)
		}
	},
	"schema-invalid-tool": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "tools/list", nil, sessionHeaders(sid)); !strings.Contains(string(r.body), `"icons":"weather.png"`) {
			t.Errorf("tools/list: %s", r)
		}
	},
	"prm-resource-mismatch": func(t *testing.T, c *client) {
		if prm := getJSON(c, strings.TrimSuffix(c.url, EndpointPath)+ProtectedResourcePath); prm["resource"] != "https://elsewhere.example/mcp" {
			t.Errorf("PRM: %v", prm)
		}
	},
	"as-no-pkce": func(t *testing.T, c *client) {
		if as := getJSON(c, strings.TrimSuffix(c.url, EndpointPath)+AuthorizationServerPath); as == nil || as["code_challenge_methods_supported"] != nil {
			t.Errorf("AS metadata: %v", as)
		}
	},
	"stateless-version-accepted": func(t *testing.T, c *client) {
		if r := c.request2026("tools/list", "1999-01-01", nil, nil); r.status != http.StatusOK {
			t.Errorf("_meta 1999-01-01: %s", r)
		}
	},
	"stateless-header-ignored": func(t *testing.T, c *client) {
		if r := c.request2026("tools/list", version2026, nil, map[string]string{headerMethod: "prompts/list"}); r.status != http.StatusOK {
			t.Errorf("Mcp-Method mismatch: %s", r)
		}
	},
	"card-invalid": func(t *testing.T, c *client) {
		resp, err := c.hc.Get(strings.TrimSuffix(c.url, EndpointPath) + ServerCardPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v any
		if err := json.NewDecoder(resp.Body).Decode(&v); resp.StatusCode != http.StatusOK || err == nil {
			t.Errorf("card: HTTP %d, decodes: %v", resp.StatusCode, err)
		}
	},
	"hidden-instructions": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "tools/list", nil, sessionHeaders(sid)); !strings.Contains(string(r.body), "\u200b<IMPORTANT>") {
			t.Errorf("tools/list: %s", r)
		}
	},
	"destructive-no-hint": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		r := c.request(version2025, "tools/list", nil, sessionHeaders(sid))
		if !strings.Contains(string(r.body), `"delete_records"`) || strings.Count(string(r.body), "destructiveHint") != 2 {
			t.Errorf("tools/list: %s", r)
		}
	},
	"open-schema": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		if r := c.request(version2025, "tools/list", nil, sessionHeaders(sid)); !strings.Contains(string(r.body), `"additionalProperties":true`) {
			t.Errorf("tools/list: %s", r)
		}
	},
	"many-tools": func(t *testing.T, c *client) {
		sid, _ := c.session2025()
		n, params := 0, any(nil)
		for range 5 {
			r := c.request(version2025, "tools/list", params, sessionHeaders(sid))
			page, _ := r.result()["tools"].([]any)
			n += len(page)
			next, _ := r.result()["nextCursor"].(string)
			if next == "" {
				break
			}
			params = map[string]any{"cursor": next}
		}
		if n != 45 {
			t.Errorf("%d tools", n)
		}
	},
}

// TestSDKClient connects the official Go SDK client to the fixtures: the 2025 handshake with
// Correct, Full and Protected, and the stateless revision (discover first, as the client does by
// default) with Dual and Stateless.
func TestSDKClient(t *testing.T) {
	cases := []struct {
		name     string
		handler  http.Handler
		token    string
		version  string // the protocol version the client ends up speaking
		full     bool
		legacyOK bool
	}{
		{"Correct", Correct(), "", version2025, false, true},
		{"Full", Full(), "", version2025, true, true},
		{"Protected", Protected("tok"), "tok", version2025, false, true},
		{"Dual", Dual(), "", version2026, false, true},
		{"Stateless", Stateless(), "", version2026, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, tc.handler)
			hc := fixtureCA.Client()
			if tc.token != "" {
				hc.Transport = bearerTransport{token: tc.token, next: hc.Transport}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cl := mcp.NewClient(&mcp.Implementation{Name: "audittest-sdk-client", Version: "0.0.1"}, nil)
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}, nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			init := cs.InitializeResult()
			if init.ProtocolVersion != tc.version || init.ServerInfo == nil || init.ServerInfo.Name != ServerName {
				t.Errorf("initialize result: %+v", init)
			}
			checkSDKSurface(ctx, t, cs, tc.full)

			if tc.legacyOK && tc.version == version2026 {
				// Dual also completes the 2025 handshake when the client asks for it.
				legacy, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version2025})
				if err != nil {
					t.Fatalf("connect 2025: %v", err)
				}
				if v := legacy.InitializeResult().ProtocolVersion; v != version2025 {
					t.Errorf("2025 handshake negotiated %s", v)
				}
				checkSDKSurface(ctx, t, legacy, false)
				if err := legacy.Close(); err != nil {
					t.Errorf("close 2025 session: %v", err)
				}
			}
		})
	}
}

func checkSDKSurface(ctx context.Context, t *testing.T, cs *mcp.ClientSession, full bool) {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools: %v", err)
		}
		names = append(names, tool.Name)
		if tool.Annotations == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s lacks annotations or an output schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"delete_alert", "get_forecast", "list_stations"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_forecast", Arguments: map[string]any{"city": "Lisbon", "days": 2}})
	if err != nil || res.IsError || res.StructuredContent == nil {
		t.Errorf("call get_forecast: %+v, %v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
	if !full {
		return
	}
	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts: %v", err)
		}
		prompts = append(prompts, p.Name)
		if len(p.Arguments) == 0 {
			t.Errorf("prompt %s has no arguments", p.Name)
		}
	}
	if len(prompts) != 1 {
		t.Errorf("prompts %v", prompts)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize_forecast", Arguments: map[string]string{"city": "Lisbon"}}); err != nil {
		t.Errorf("get prompt: %v", err)
	}
	n := 0
	for _, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources: %v", err)
		}
		n++
	}
	for _, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("templates: %v", err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d resources and templates, want 2", n)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resourceURI}); err != nil || len(r.Contents) != 1 {
		t.Errorf("read resource: %+v, %v", r, err)
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestSmoke sends the first request of each fixture by hand: initialize (discover for Stateless)
// answered correctly over TLS by a client that trusts only the CA.
func TestSmoke(t *testing.T) {
	type fixture struct {
		h     http.Handler
		token string
	}
	fixtures := map[string]fixture{"Correct": {Correct(), ""}, "Full": {Full(), ""}, "Dual": {Dual(), ""}, "Protected": {Protected("t"), "t"}}
	for _, d := range Defects() {
		if d.Name != "initialize-missing-serverinfo" && d.Name != "version-echo" {
			fixtures["defect "+d.Name] = fixture{d.Handler(), d.Token}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fixtures)) {
		t.Run(name, func(t *testing.T) {
			s := serve(t, fixtures[name].h)
			c := newClient(t, fixtureCA, s.URL, fixtures[name].token)
			sid, r := c.session2025()
			info, _ := r.result()["serverInfo"].(map[string]any)
			if r.status != http.StatusOK || r.result()["protocolVersion"] != version2025 || info["name"] != ServerName || sid == "" {
				t.Errorf("initialize: %s", r)
			}
		})
	}
	t.Run("Stateless", func(t *testing.T) {
		s := serve(t, Stateless())
		c := newClient(t, fixtureCA, s.URL, "")
		r := c.request2026("server/discover", version2026, nil, nil)
		if r.status != http.StatusOK || r.result()["resultType"] != "complete" {
			t.Errorf("discover: %s", r)
		}
		if err := validateSchema(version2026, "DiscoverResult", r.result()); err != nil {
			t.Errorf("discover result: %v", err)
		}
		init := c.request(version2025, "initialize", initParams(version2025), nil)
		e, _ := init.msg["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if init.status != http.StatusBadRequest || init.errorCode() != codeUnsupportedVersion || !slices.Equal(data["supported"].([]any), []any{version2026}) {
			t.Errorf("2025 initialize: %s", init)
		}
		if err := validateSchema(version2026, "UnsupportedProtocolVersionError", init.msg); err != nil {
			t.Errorf("refusal: %v", err)
		}
	})
}
