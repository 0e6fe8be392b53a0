package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/app"
)

// publicSeedServer lists namespace/name as the registry sync would: a server row and its current
// snapshot, whose server.json names remotes.
func publicSeedServer(t testing.TB, s *stack, namespace, name string, remotes ...string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	id, snap := uuid.New(), uuid.New()
	rs := make([]map[string]string, 0, len(remotes))
	for _, r := range remotes {
		rs = append(rs, map[string]string{"type": "streamable-http", "url": r})
	}
	doc, _ := json.Marshal(map[string]any{"name": namespace + "/" + name, "version": "1.0.0", "remotes": rs})
	if _, err := s.Pool.Exec(ctx, `INSERT INTO intel_servers (id, namespace, name) VALUES ($1, $2, $3)`, id, namespace, name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool.Exec(ctx, `
INSERT INTO intel_snapshots (id, server_id, registry, version, status, is_latest, content_hash, server_json)
VALUES ($1, $2, 'https://registry.example', '1.0.0', 'active', true, $3, $4)`, snap, id, strings.Repeat("a", 64), doc); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool.Exec(ctx, `UPDATE intel_servers SET current_snapshot_id = $2 WHERE id = $1`, id, snap); err != nil {
		t.Fatal(err)
	}
	return snap
}

// publicSeedAudit records an audit of url at a time.
func publicSeedAudit(t testing.TB, s *stack, url string, at time.Time) {
	t.Helper()
	if _, err := s.Pool.Exec(context.Background(), `
INSERT INTO audits (id, kind, url, issuer, subject, verdict, score, report, created_at)
VALUES ($1, 'mcp', $2, 'test', 'test', 'pass', 100, '{}', $3)`, uuid.New(), url, at); err != nil {
		t.Fatal(err)
	}
}

// publicSeedChange records a change of a server's snapshot with a risk, detected at a time.
func publicSeedChange(t testing.TB, s *stack, namespace, name string, snap uuid.UUID, risk string, at time.Time) {
	t.Helper()
	if _, err := s.Pool.Exec(context.Background(), `
INSERT INTO intel_changes (id, server_id, namespace, name, from_snapshot_id, to_snapshot_id, from_version, to_version, field,
    old_value, new_value, change_type, risk, summary, detected_at)
SELECT $1, id, namespace, name, $4, $4, '1.0.0', '1.0.0', 'description', 'a', 'b', 'description_changed', $5, 's', $6
FROM intel_servers WHERE namespace = $2 AND name = $3`, uuid.New(), namespace, name, snap, risk, at); err != nil {
		t.Fatal(err)
	}
}

func TestPublicCoverageSummary(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"VERIFICATION_COVERAGE_CACHE_TTL": "0s"})
	now := time.Now()
	a := publicSeedServer(t, s, "com.example", "alpha", "https://alpha.example/mcp", "https://alpha.example/sse")
	publicSeedServer(t, s, "com.example", "beta", "https://beta.example/mcp")
	publicSeedServer(t, s, "io.github.alice", "local-only")
	publicSeedAudit(t, s, "https://alpha.example/sse", now.Add(-2*24*time.Hour))
	publicSeedAudit(t, s, "https://alpha.example/mcp", now.Add(-3*time.Hour))
	publicSeedAudit(t, s, "https://beta.example/mcp", now.Add(-20*24*time.Hour))
	publicSeedAudit(t, s, "https://unlisted.example/mcp", now)
	publicSeedChange(t, s, "com.example", "alpha", a, "high", now.Add(-time.Hour))
	publicSeedChange(t, s, "com.example", "alpha", a, "low", now.Add(-2*time.Hour))
	publicSeedChange(t, s, "com.example", "alpha", a, "medium", now.Add(-48*time.Hour))
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO intel_registries (url, last_success_at, last_poll_at) VALUES ('https://registry.example', $1, $1)`, now); err != nil {
		t.Fatal(err)
	}

	// No credential: the route is public.
	var got struct {
		ServersTracked     string `json:"servers_tracked"`
		ServersWithRemotes string `json:"servers_with_remotes"`
		Audited7d          string `json:"servers_audited_7d"`
		Audited30d         string `json:"servers_audited_30d"`
		Changes            struct {
			Total, High, Medium, Low string
		} `json:"changes_24h"`
		Registries []struct {
			URL        string  `json:"url"`
			LastSyncAt *string `json:"last_sync_at"`
		} `json:"registries"`
		GeneratedAt  string `json:"generated_at"`
		CacheSeconds int    `json:"cache_seconds"`
	}
	s.Must("GET", "/v1/coverage-summary", nil, nil, http.StatusOK).Decode(t, &got)
	want := [4]string{"3", "2", "1", "2"}
	if g := [4]string{got.ServersTracked, got.ServersWithRemotes, got.Audited7d, got.Audited30d}; g != want {
		t.Errorf("tracked, with remotes, audited 7d, 30d: got %v, want %v", g, want)
	}
	if got.Changes.Total != "2" || got.Changes.High != "1" || got.Changes.Low != "1" || got.Changes.Medium != "0" {
		t.Errorf("changes_24h: got %+v, want total 2, high 1, medium 0, low 1", got.Changes)
	}
	if len(got.Registries) != 1 || got.Registries[0].URL != "https://registry.example" || got.Registries[0].LastSyncAt == nil {
		t.Errorf("registries: got %+v, want the one registry with its last sync", got.Registries)
	}
	if got.GeneratedAt == "" || got.CacheSeconds != 0 {
		t.Errorf("generated_at %q, cache_seconds %d: want a time and 0", got.GeneratedAt, got.CacheSeconds)
	}
}

func TestPublicCoverageSummaryCached(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"VERIFICATION_COVERAGE_CACHE_TTL": "10m"})
	first := s.Must("GET", "/v1/coverage-summary", nil, nil, http.StatusOK).Object(t)
	publicSeedServer(t, s, "com.example", "later")
	second := s.Must("GET", "/v1/coverage-summary", nil, nil, http.StatusOK).Object(t)
	if first["generated_at"] != second["generated_at"] || second["servers_tracked"] != "0" || second["cache_seconds"] != float64(600) {
		t.Errorf("within the TTL: got %v then %v, want the same cached answer (0 servers, cache_seconds 600)", first, second)
	}
}

func TestPublicAnalyticsEvents(t *testing.T) {
	t.Parallel()
	s := startService(t)
	ok := map[string]any{"name": "claim_page_viewed", "page": "/claim", "properties": map[string]any{"source": "newsletter", "step": 2, "returning": true}}
	if got := s.Must("POST", "/api/analytics/events", ok, nil, http.StatusOK).Object(t); got["status"] != "accepted" {
		t.Errorf("accepted event: got %v", got)
	}
	if n := s.Count(`SELECT count(*) FROM public_analytics_events WHERE name = 'claim_page_viewed' AND properties->>'source' = 'newsletter'`); n != 1 {
		t.Errorf("stored events: got %d, want 1", n)
	}
	// Nothing that identifies the visitor is a column of the table.
	if n := s.Count(`SELECT count(*) FROM information_schema.columns WHERE table_name = 'public_analytics_events'
		AND column_name NOT IN ('id', 'name', 'page', 'properties', 'received_at')`); n != 0 {
		t.Errorf("columns besides id, name, page, properties, received_at: got %d, want 0", n)
	}
	for _, c := range []struct {
		what string
		body map[string]any
		loc  string
		typ  string
	}{
		{"unknown name", map[string]any{"name": "bought_a_car", "page": "/claim"}, "name", "enum"},
		{"no name", map[string]any{"page": "/claim"}, "name", "missing"},
		{"query in page", map[string]any{"name": "page_viewed", "page": "/claim?email=a@b.co"}, "page", "value_error"},
		{"email", map[string]any{"name": "page_viewed", "page": "/claim", "properties": map[string]any{"note": "write to Alice.B+x@mail.example.org"}}, "properties.note", "personal_data"},
		{"phone", map[string]any{"name": "page_viewed", "page": "/claim", "properties": map[string]any{"note": "+1 (415) 555-0100"}}, "properties.note", "personal_data"},
		{"phone number", map[string]any{"name": "page_viewed", "page": "/claim", "properties": map[string]any{"n": 4155550100}}, "properties.n", "personal_data"},
		{"ip", map[string]any{"name": "page_viewed", "page": "/claim", "properties": map[string]any{"from": "203.0.113.9"}}, "properties.from", "personal_data"},
		{"personal key", map[string]any{"name": "page_viewed", "page": "/claim", "properties": map[string]any{"email": "x"}}, "properties.email", "personal_data"},
		{"nested", map[string]any{"name": "page_viewed", "page": "/claim", "properties": map[string]any{"o": map[string]any{"a": 1}}}, "properties.o", "value_error"},
		{"long", map[string]any{"name": "page_viewed", "page": "/claim", "properties": map[string]any{"s": strings.Repeat("x", 201)}}, "properties.s", "string_too_long"},
	} {
		r := s.Must("POST", "/api/analytics/events", c.body, nil, http.StatusUnprocessableEntity)
		var body struct {
			Detail []struct {
				Loc  []any  `json:"loc"`
				Type string `json:"type"`
			} `json:"detail"`
		}
		r.Decode(t, &body)
		found := false
		for _, d := range body.Detail {
			loc := make([]string, 0, len(d.Loc))
			for _, l := range d.Loc[1:] {
				loc = append(loc, fmt.Sprint(l))
			}
			found = found || strings.Join(loc, ".") == c.loc && d.Type == c.typ
		}
		if !found {
			t.Errorf("%s: got %s, want a violation at body.%s of type %s", c.what, r.Body, c.loc, c.typ)
		}
	}
	if n := s.Count(`SELECT count(*) FROM public_analytics_events`); n != 1 {
		t.Errorf("after the refusals: %d events stored, want 1", n)
	}
}

func TestPublicAnalyticsRateLimit(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{
		"VERIFICATION_ANALYTICS_EVENTS_PER_CLIENT_MINUTE": "3",
		"VERIFICATION_PUBLIC_TRUSTED_PROXY_HOPS":          "1",
	})
	ev := map[string]any{"name": "page_viewed", "page": "/claim"}
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	for range 3 {
		s.Must("POST", "/api/analytics/events", ev, from("198.51.100.7"), http.StatusOK)
	}
	r := s.Must("POST", "/api/analytics/events", ev, from("198.51.100.7"), http.StatusTooManyRequests)
	var body struct {
		Detail struct {
			Error      string `json:"error"`
			RetryAfter int    `json:"retry_after_seconds"`
		} `json:"detail"`
	}
	r.Decode(t, &body)
	if body.Detail.Error != "contact_rate_limited" || body.Detail.RetryAfter < 1 || body.Detail.RetryAfter > 60 {
		t.Errorf("429 body: got %s, want contact_rate_limited with retry_after_seconds 1..60", r.Body)
	}
	if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n != body.Detail.RetryAfter {
		t.Errorf("Retry-After: got %q, want %d", r.Header.Get("Retry-After"), body.Detail.RetryAfter)
	}
	// Another client is counted on its own; the refused event was not stored.
	s.Must("POST", "/api/analytics/events", ev, from("198.51.100.8"), http.StatusOK)
	if n := s.Count(`SELECT count(*) FROM public_analytics_events`); n != 4 {
		t.Errorf("stored: got %d, want 4", n)
	}
	// The counters hold digests, never the address.
	if n := s.Count(`SELECT count(*) FROM public_rate_counters WHERE subject LIKE '%198.51%'`); n != 0 {
		t.Errorf("counters naming the address: got %d, want 0", n)
	}
}

func TestPublicAnalyticsRetention(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{
		"VERIFICATION_ANALYTICS_MAX_EVENTS":     "3",
		"VERIFICATION_ANALYTICS_PRUNE_INTERVAL": "1s",
		"VERIFICATION_ANALYTICS_RETENTION":      "1h",
	})
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO public_analytics_events (name, page, received_at) VALUES ('page_viewed', '/old', now() - interval '2 hours')`); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		s.Must("POST", "/api/analytics/events", map[string]any{"name": "page_viewed", "page": "/claim"}, nil, http.StatusOK)
	}
	eventually(t, "retention to trim the events to 3, the old one first", func() bool {
		return s.Count(`SELECT count(*) FROM public_analytics_events`) == 3 && s.Count(`SELECT count(*) FROM public_analytics_events WHERE page = '/old'`) == 0
	})
}

// publicClaimEnv is the environment of a service whose claim checks resolve through dns and fetch over
// http on port.
func publicClaimEnv(dns *publicFakeDNS, port string, extra map[string]string) map[string]string {
	env := map[string]string{
		"VERIFICATION_CLAIM_DNS_SERVER":    dns.addr,
		"VERIFICATION_CLAIM_HTTP_SCHEME":   "http",
		"VERIFICATION_CLAIM_HTTP_PORT":     port,
		"VERIFICATION_ALLOW_PRIVATE_CIDRS": "127.0.0.0/8",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

type publicClaimIntent struct {
	ClaimID     string   `json:"claim_id"`
	ClaimSecret string   `json:"claim_secret"`
	Server      string   `json:"server"`
	Status      string   `json:"status"`
	Methods     []string `json:"methods"`
	Token       string   `json:"token"`
	DNS         *struct {
		RecordName  string `json:"record_name"`
		RecordType  string `json:"record_type"`
		RecordValue string `json:"record_value"`
	} `json:"dns"`
	HTTP *struct {
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"http"`
}

func TestPublicClaimDomain(t *testing.T) {
	t.Parallel()
	dns := newPublicFakeDNS(t)
	var proof string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/mcp-claim" || proof == "" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(proof + "\n"))
	}))
	t.Cleanup(site.Close)
	_, port, _ := strings.Cut(strings.TrimPrefix(site.URL, "http://"), ":")
	dns.setA("example.com", netip.MustParseAddr("127.0.0.1"))
	dns.setA("example.org", netip.MustParseAddr("127.0.0.1"))
	s := startService(t, publicClaimEnv(dns, port, nil))
	publicSeedServer(t, s, "com.example", "weather")
	publicSeedServer(t, s, "org.example", "tides")

	// An unlisted server, a malformed name: refused.
	s.Must("POST", "/claim/intent", map[string]any{"server": "com.example/unlisted"}, nil, http.StatusNotFound)
	s.Must("POST", "/claim/intent", map[string]any{"server": "<script>alert(1)</script>"}, nil, http.StatusUnprocessableEntity)
	s.Must("POST", "/claim/intent", map[string]any{"server": "com.example/weather", "source": "bad source!"}, nil, http.StatusUnprocessableEntity)

	var in publicClaimIntent
	s.Must("POST", "/claim/intent", map[string]any{"server": "com.example/weather", "source": "badge"}, nil, http.StatusOK).Decode(t, &in)
	if in.Status != "pending" || strings.Join(in.Methods, ",") != "dns,http" || in.Token == "" || in.ClaimSecret == "" ||
		in.DNS == nil || in.DNS.RecordName != "_mcp-claim.example.com" || in.DNS.RecordValue != "mcp-claim="+in.Token ||
		in.HTTP == nil || in.HTTP.URL != "http://example.com:"+port+"/.well-known/mcp-claim" {
		t.Fatalf("intent: got %+v", in)
	}
	// Only digests are stored.
	if n := s.Count(`SELECT count(*) FROM claim_intents WHERE encode(secret_hash, 'escape') LIKE '%' || $1 || '%' OR source <> 'badge'`, in.ClaimSecret); n != 0 {
		t.Errorf("claims storing the secret or losing the source: %d", n)
	}
	start := func(secret, method string, want int) map[string]any {
		return s.Must("POST", "/claim/start", map[string]any{"claim_id": in.ClaimID, "claim_secret": secret, "method": method}, nil, want).Object(t)
	}
	// A wrong secret is the unknown claim's 404; a method the namespace does not take is 422.
	start("cs_wrong", "dns", http.StatusNotFound)
	start(in.ClaimSecret, "code_host", http.StatusUnprocessableEntity)
	s.Must("POST", "/claim/start", map[string]any{"claim_id": "nope", "claim_secret": "x", "method": "dns"}, nil, http.StatusUnprocessableEntity)

	// No record yet, then a record with another token: pending, with the reason.
	if got := start(in.ClaimSecret, "dns", http.StatusOK); got["status"] != "pending" || !strings.Contains(got["reason"].(string), "_mcp-claim.example.com") {
		t.Errorf("no record: got %v, want pending with a reason naming the record", got)
	}
	dns.setTXT("_mcp-claim.example.com", "mcp-claim=someone-else", "v=spf1 -all")
	if got := start(in.ClaimSecret, "dns", http.StatusOK); got["status"] != "pending" {
		t.Errorf("wrong token: got %v, want pending", got)
	}
	dns.setTXT("_mcp-claim.example.com", "v=spf1 -all", in.DNS.RecordValue)
	got := start(in.ClaimSecret, "dns", http.StatusOK)
	if got["status"] != "verified" || got["method"] != "dns" || got["verified_at"] == nil {
		t.Fatalf("published record: got %v, want verified by dns", got)
	}

	// The HTTP proof of the other domain.
	var other publicClaimIntent
	s.Must("POST", "/claim/intent", map[string]any{"server": "org.example/tides"}, nil, http.StatusOK).Decode(t, &other)
	startOther := func() map[string]any {
		return s.Must("POST", "/claim/start", map[string]any{"claim_id": other.ClaimID, "claim_secret": other.ClaimSecret, "method": "http"}, nil, http.StatusOK).Object(t)
	}
	if got := startOther(); got["status"] != "pending" || strings.Contains(got["reason"].(string), "127.0.0.1") {
		t.Errorf("no file: got %v, want pending with a reason naming no address", got)
	}
	proof = other.Token
	if got := startOther(); got["status"] != "verified" || got["method"] != "http" {
		t.Errorf("served file: got %v, want verified by http", got)
	}
}

func TestPublicClaimHTTPProofSSRF(t *testing.T) {
	t.Parallel()
	dns := newPublicFakeDNS(t)
	dns.setA("example.com", netip.MustParseAddr("127.0.0.1"))
	// Without the private range opened, a domain resolving to loopback is never fetched.
	s := startService(t, map[string]string{
		"VERIFICATION_CLAIM_DNS_SERVER":  dns.addr,
		"VERIFICATION_CLAIM_HTTP_SCHEME": "http",
	})
	publicSeedServer(t, s, "com.example", "weather")
	var in publicClaimIntent
	s.Must("POST", "/claim/intent", map[string]any{"server": "com.example/weather"}, nil, http.StatusOK).Decode(t, &in)
	got := s.Must("POST", "/claim/start", map[string]any{"claim_id": in.ClaimID, "claim_secret": in.ClaimSecret, "method": "http"}, nil, http.StatusOK).Object(t)
	if got["status"] != "pending" || strings.Contains(fmt.Sprint(got["reason"]), "127.0.0.1") {
		t.Errorf("loopback proof: got %v, want pending, naming no address", got)
	}
}

func TestPublicClaimCodeHost(t *testing.T) {
	t.Parallel()
	host := newPublicFakeCodeHost(t, "Alice")
	s := startService(t, map[string]string{
		"VERIFICATION_CLAIM_CODE_HOST_URL":           host.URL,
		"VERIFICATION_CLAIM_CODE_HOST_API_URL":       host.URL,
		"VERIFICATION_CLAIM_CODE_HOST_CLIENT_ID":     "test-client",
		"VERIFICATION_CLAIM_CODE_HOST_CLIENT_SECRET": "test-secret",
		"VERIFICATION_CLAIM_CODE_HOST_CALLBACK_URL":  "http://service.invalid/claim/callback",
	})
	publicSeedServer(t, s, "io.github.alice", "weather")
	publicSeedServer(t, s, "io.github.bob", "tides")
	verify := func(server string) (map[string]any, *http.Response, string) {
		var in publicClaimIntent
		s.Must("POST", "/claim/intent", map[string]any{"server": server}, nil, http.StatusOK).Decode(t, &in)
		if strings.Join(in.Methods, ",") != "code_host" || in.Token != "" || in.DNS != nil {
			t.Fatalf("intent of %s: got %+v, want the code_host method alone", server, in)
		}
		got := s.Must("POST", "/claim/start", map[string]any{"claim_id": in.ClaimID, "claim_secret": in.ClaimSecret, "method": "code_host"}, nil, http.StatusOK).Object(t)
		authorize, _ := got["authorize_url"].(string)
		if !strings.HasPrefix(authorize, host.URL+"/login/oauth/authorize?") || !strings.Contains(authorize, "client_id=test-client") {
			t.Fatalf("authorize_url: got %q", authorize)
		}
		// The browser signs in; the code host sends it back to the callback, which is this service's.
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(authorize)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		back, _ := url.Parse(resp.Header.Get("Location"))
		r := s.Do("GET", "/claim/callback?"+back.RawQuery, nil, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("callback: got %d %s", r.Status, r.Body)
		}
		// The state is single-use.
		if again := s.Do("GET", "/claim/callback?"+back.RawQuery, nil, nil); again.Status != http.StatusBadRequest {
			t.Errorf("second callback: got %d, want 400", again.Status)
		}
		var status string
		_ = s.Pool.QueryRow(context.Background(), `SELECT status FROM claim_intents WHERE id = $1`, in.ClaimID).Scan(&status)
		return got, resp, status + " " + string(r.Body)
	}
	if _, _, out := verify("io.github.alice/weather"); !strings.HasPrefix(out, "verified ") || !strings.Contains(out, "Verified") {
		t.Errorf("alice signing in for io.github.alice: got %.200s, want verified", out)
	}
	if _, _, out := verify("io.github.bob/tides"); !strings.HasPrefix(out, "pending ") || !strings.Contains(out, "signed in as Alice") {
		t.Errorf("alice signing in for io.github.bob: got %.300s, want pending, saying who signed in", out)
	}
	if r := s.Do("GET", "/claim/callback?code=x&state=forged", nil, nil); r.Status != http.StatusBadRequest {
		t.Errorf("forged state: got %d, want 400", r.Status)
	}
}

func TestPublicClaimCodeHostNotConfigured(t *testing.T) {
	t.Parallel()
	s := startService(t)
	publicSeedServer(t, s, "io.github.alice", "weather")
	var in publicClaimIntent
	s.Must("POST", "/claim/intent", map[string]any{"server": "io.github.alice/weather"}, nil, http.StatusOK).Decode(t, &in)
	got := s.Must("POST", "/claim/start", map[string]any{"claim_id": in.ClaimID, "claim_secret": in.ClaimSecret, "method": "code_host"}, nil, http.StatusServiceUnavailable).Object(t)
	if d, _ := got["detail"].(map[string]any); d["error"] != "code_host_unavailable" {
		t.Errorf("got %v, want code_host_unavailable", got)
	}
}

func TestPublicClaimRateLimits(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{
		"VERIFICATION_CLAIM_INTENTS_PER_CLIENT_HOUR": "2",
		"VERIFICATION_CLAIM_CHECKS_PER_CLIENT_HOUR":  "1",
	})
	publicSeedServer(t, s, "com.example", "weather")
	var in publicClaimIntent
	s.Must("POST", "/claim/intent", map[string]any{"server": "com.example/weather"}, nil, http.StatusOK).Decode(t, &in)
	s.Must("POST", "/claim/intent", map[string]any{"server": "com.example/weather"}, nil, http.StatusOK)
	r := s.Must("POST", "/claim/intent", map[string]any{"server": "com.example/weather"}, nil, http.StatusTooManyRequests)
	if !strings.Contains(string(r.Body), `"contact_rate_limited"`) {
		t.Errorf("intent 429: got %s, want contact_rate_limited", r.Body)
	}
	body := map[string]any{"claim_id": in.ClaimID, "claim_secret": in.ClaimSecret, "method": "dns"}
	s.Must("POST", "/claim/start", body, nil, http.StatusOK)
	r = s.Must("POST", "/claim/start", body, nil, http.StatusTooManyRequests)
	if !strings.Contains(string(r.Body), `"scan_rate_limited"`) {
		t.Errorf("start 429: got %s, want scan_rate_limited", r.Body)
	}
}

func TestPublicClaimPagesHTML(t *testing.T) {
	t.Parallel()
	s := startService(t)
	r := s.Must("GET", "/claim?server=io.github.alice/weather&source=badge", nil, nil, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'nonce-") {
		t.Errorf("headers: got %v", r.Header)
	}
	if !strings.Contains(string(r.Body), `data-server="io.github.alice/weather"`) || !strings.Contains(string(r.Body), "code_host") {
		t.Errorf("page of a server: got %.500s", r.Body)
	}
	evil := "<script>alert(1)</script>"
	r = s.Must("GET", "/claim?server="+url.QueryEscape(evil)+"&source="+url.QueryEscape(`"><img src=x onerror=alert(1)>`), nil, nil, http.StatusOK)
	if strings.Contains(string(r.Body), evil) || strings.Contains(string(r.Body), "<img src=x") || !strings.Contains(string(r.Body), "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("injected markup: got %s, want it escaped", r.Body)
	}
	s.Must("GET", "/claim", nil, nil, http.StatusOK)

	r = s.Must("GET", "/claim/start/com.example/weather", nil, nil, http.StatusOK)
	next := "/claim?intent=start&amp;server=com.example%2Fweather&amp;source=direct"
	if !strings.Contains(string(r.Body), `href="`+next+`"`) || !strings.Contains(string(r.Body), `http-equiv="refresh"`) {
		t.Errorf("start page: got %s, want a refresh and a link to %s", r.Body, next)
	}
	s.Must("GET", "/claim/start/com.example/weather?next=https://evil.example", nil, nil, http.StatusUnprocessableEntity)
	s.Must("GET", "/claim/start/localhost/weather", nil, nil, http.StatusUnprocessableEntity)
}

func TestPublicSettingsValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []map[string]string{
		{"VERIFICATION_ANALYTICS_MAX_EVENTS": "0"},
		{"VERIFICATION_CLAIM_DNS_SERVER": "dns.example"},
		{"VERIFICATION_CLAIM_HTTP_SCHEME": "ftp"},
		{"VERIFICATION_CLAIM_CODE_HOST_CLIENT_ID": "x"},
		{"VERIFICATION_CLAIM_CODE_HOST_CLIENT_ID": "x", "VERIFICATION_CLAIM_CODE_HOST_CLIENT_SECRET": "y"},
		{"VERIFICATION_COVERAGE_CACHE_TTL": "1h"},
	} {
		getenv := func(k string) string {
			if v, ok := c[k]; ok {
				return v
			}
			if k == "VERIFICATION_DATABASE_URL" {
				return "postgres://x@127.0.0.1/x"
			}
			return ""
		}
		if _, err := app.LoadConfig(getenv); err == nil {
			t.Errorf("%v: LoadConfig succeeded, want a settings error", c)
		}
	}
}
