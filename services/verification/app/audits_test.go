package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
	"github.com/trustlayer/trustlayer/services/verification/app"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
)

// fixtures is the test CA of the audit fixtures; TestMain makes the process trust it (SSL_CERT_FILE,
// which Go reads once, at the first TLS verification), as the service trusts the system roots.
var fixtures *audittest.CA

func TestMain(m *testing.M) {
	ca, err := audittest.NewCA()
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "verification-app-ca-")
	if err != nil {
		panic(err)
	}
	file, err := ca.WriteCertFile(dir)
	if err != nil {
		panic(err)
	}
	os.Setenv("SSL_CERT_FILE", file)
	fixtures = ca
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startAuditor starts the service with loopback targets allowed on port.
func startAuditor(t *testing.T, port int, extra ...map[string]string) *stack {
	t.Helper()
	return startService(t, append([]map[string]string{{
		app.EnvPrefix + "ALLOW_PRIVATE_CIDRS": "127.0.0.0/8",
		app.EnvPrefix + "AUDIT_ALLOWED_PORTS": strconv.Itoa(port),
	}}, extra...)...)
}

// token issues an audit token with scopes.
func (s *stack) token(subject string, ttl int, scopes ...string) string {
	s.t.Helper()
	r := s.Must("POST", "/v1/audits/tokens", map[string]any{"subject": subject, "scopes": scopes, "ttl_seconds": ttl}, admin, http.StatusCreated)
	return r.Object(s.t)["token"].(string)
}

func TestAuditTokens(t *testing.T) {
	s := startService(t)
	r := s.Must("POST", "/v1/audits/tokens", map[string]any{"subject": "ci", "scopes": []string{"service:audit"}, "ttl_seconds": 60}, admin, http.StatusCreated)
	body := r.Object(t)
	tok, _ := body["token"].(string)
	exp, err := time.Parse(time.RFC3339Nano, body["expires_at"].(string))
	if err != nil || time.Until(exp) > 61*time.Second || time.Until(exp) < 50*time.Second {
		t.Fatalf("expires_at = %v (%v), want about a minute from now", body["expires_at"], err)
	}

	// The token verifies against the published JWKS, by kid.
	jwks := s.Must("GET", "/.well-known/jwks.json", nil, nil, http.StatusOK)
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	jwks.Decode(t, &set)
	if len(set.Keys) != 1 || set.Keys[0]["d"] != nil {
		t.Fatalf("JWKS = %s, want one public key", jwks.Body)
	}
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if err != nil || parsed.Header["kid"] != set.Keys[0]["kid"] {
		t.Fatalf("token kid %v, JWKS kid %v (%v)", parsed.Header["kid"], set.Keys[0]["kid"], err)
	}
	claims := parsed.Claims.(jwt.MapClaims)
	if claims["sub"] != "ci" || claims["scope"] != "service:audit" {
		t.Fatalf("claims = %v", claims)
	}

	for _, tc := range []struct {
		name   string
		body   map[string]any
		header map[string]string
		want   int
	}{
		{"no admin token", map[string]any{"subject": "x", "scopes": []string{"service:audit"}}, nil, http.StatusUnauthorized},
		{"wrong admin token", map[string]any{"subject": "x", "scopes": []string{"service:audit"}}, servicetest.Admin("nope"), http.StatusUnauthorized},
		{"no subject", map[string]any{"scopes": []string{"service:audit"}}, admin, http.StatusUnprocessableEntity},
		{"no scopes", map[string]any{"subject": "x"}, admin, http.StatusUnprocessableEntity},
		{"unknown scope", map[string]any{"subject": "x", "scopes": []string{"watch:read"}}, admin, http.StatusUnprocessableEntity},
		{"ttl too long", map[string]any{"subject": "x", "scopes": []string{"service:audit"}, "ttl_seconds": 86401}, admin, http.StatusUnprocessableEntity},
		{"negative ttl", map[string]any{"subject": "x", "scopes": []string{"service:audit"}, "ttl_seconds": -5}, admin, http.StatusUnprocessableEntity},
	} {
		if r := s.Do("POST", "/v1/audits/tokens", tc.body, tc.header); r.Status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.want)
		}
	}
}

func TestAuditAuthentication(t *testing.T) {
	s := startService(t)
	audit := s.token("ci", 600, "service:audit")
	ready := s.token("ci", 600, "service:readiness")
	target := map[string]any{"url": "https://93.184.216.34/mcp"}
	detail := func(r servicetest.Reply) any { return r.Object(t)["detail"] }
	for _, tc := range []struct {
		name, route string
		header      map[string]string
		status      int
		detail      string
	}{
		{"mcp without token", "/v1/audits/mcp", nil, 401, "Missing bearer token"},
		{"readiness without token", "/v1/audits/readiness", nil, 401, "Missing bearer token"},
		{"mcp with garbage", "/v1/audits/mcp", bearer("not.a.jwt"), 401, "Invalid or expired token"},
		{"mcp with an API key shape", "/v1/audits/mcp", bearer("vk_abcdefghijklmnopqrstuvwxyz"), 401, "Invalid or expired token"},
		{"mcp with readiness scope", "/v1/audits/mcp", bearer(ready), 403, "Token missing required scope. Need one of: service:audit"},
		{"readiness with audit scope", "/v1/audits/readiness", bearer(audit), 403, "Token missing required scope. Need one of: service:readiness"},
	} {
		r := s.Do("POST", tc.route, target, tc.header)
		if r.Status != tc.status || detail(r) != tc.detail {
			t.Errorf("%s: %d %s, want %d %q", tc.name, r.Status, r.Body, tc.status, tc.detail)
		}
	}

	expired := s.token("ci", 1, "service:audit")
	time.Sleep(2100 * time.Millisecond)
	if r := s.Do("POST", "/v1/audits/mcp", target, bearer(expired)); r.Status != 401 || detail(r) != "Invalid or expired token" {
		t.Errorf("expired token: %d %s", r.Status, r.Body)
	}
}

func TestAuditTargetRefusals(t *testing.T) {
	s := startService(t, map[string]string{app.EnvPrefix + "AUDIT_ALLOWED_PORTS": "8443"})
	audit := bearer(s.token("ci", 600, "service:audit"))
	ready := bearer(s.token("ci", 600, "service:readiness"))
	for _, tc := range []struct {
		url, code string
	}{
		{"", "remote_url_required"},
		{"mcp.example.com/mcp", "remote_url_required"},
		{"http://93.184.216.34/mcp", "public_https_url_required"},
		{"https://user:pw@93.184.216.34/mcp", "url_credentials_or_fragment_blocked"},
		{"https://93.184.216.34/mcp#x", "url_credentials_or_fragment_blocked"},
		{"https://93.184.216.34:0/mcp", "invalid_port"},
		{"https://93.184.216.34:70000/mcp", "invalid_port"},
		{"https://93.184.216.34:8080/mcp", "https_port_required"},
		{"https://localhost/mcp", "ssrf_host_blocked"},
		{"https://printer.local/mcp", "ssrf_host_blocked"},
		{"https://metadata.google.internal/", "ssrf_host_blocked"},
		{"https://no-such-host.invalid/mcp", "dns_resolution_failed"},
		{"https://127.0.0.1/mcp", "ssrf_ip_blocked"},
		{"https://10.1.2.3/mcp", "ssrf_ip_blocked"},
		{"https://169.254.169.254/latest", "ssrf_ip_blocked"},
		{"https://[::1]/mcp", "ssrf_ip_blocked"},
		{"https://[::ffff:192.168.0.1]/mcp", "ssrf_ip_blocked"},
		{"https://[fe80::1]/mcp", "ssrf_ip_blocked"},
		{"https://100.64.0.1/mcp", "ssrf_ip_blocked"},
	} {
		for _, route := range []struct {
			path   string
			header map[string]string
		}{{"/v1/audits/mcp", audit}, {"/v1/audits/readiness", ready}} {
			r := s.Do("POST", route.path, map[string]any{"url": tc.url}, route.header)
			d, _ := r.Object(t)["detail"].(map[string]any)
			if r.Status != http.StatusBadRequest || d["error"] != tc.code || d["message"] == "" {
				t.Errorf("%s %q: %d %s, want 400 %s", route.path, tc.url, r.Status, r.Body, tc.code)
			}
			if strings.Contains(string(r.Body), ".go:") || strings.Contains(string(r.Body), "goroutine") {
				t.Errorf("%s %q: the body names the code: %s", route.path, tc.url, r.Body)
			}
		}
	}
	if s.Count("SELECT count(*) FROM audits") != 0 {
		t.Error("a refused target left an audit behind")
	}
	r := s.Do("POST", "/v1/audits/mcp", map[string]any{"url": "https://93.184.216.34/mcp", "headers": map[string]string{"Host": "x"}}, audit)
	if r.Status != http.StatusUnprocessableEntity {
		t.Errorf("a reserved header: %d %s, want 422", r.Status, r.Body)
	}
}

func TestAuditConformanceRoundTrip(t *testing.T) {
	srv := fixtures.Serve(audittest.Protected("target-secret-0123456789"))
	defer srv.Close()
	s := startAuditor(t, srv.Port)
	tok := s.token("team-a", 600, "service:audit", "service:readiness")
	const secret = "target-secret-0123456789"
	body := map[string]any{"url": srv.URL, "headers": map[string]string{"Authorization": "Bearer " + secret}}

	r := s.Must("POST", "/v1/audits/mcp", body, bearer(tok), http.StatusOK)
	if strings.Contains(string(r.Body), secret) {
		t.Fatalf("the report echoes the caller's header: %s", r.Body)
	}
	var report struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		URL     string `json:"url"`
		Verdict string `json:"verdict"`
		Counts  map[string]int
		Eras    []map[string]any `json:"eras"`
		Checks  []struct{ ID, Status, Details string }
		Surface struct {
			Hash  string           `json:"hash"`
			Tools []map[string]any `json:"tools"`
		} `json:"surface"`
		Traffic struct {
			Requests    int `json:"requests"`
			MaxRequests int `json:"max_requests"`
		} `json:"traffic"`
	}
	r.Decode(t, &report)
	if report.Kind != "mcp" || report.URL != srv.URL || report.Verdict == "fail" || report.Surface.Hash == "" || len(report.Surface.Tools) == 0 {
		t.Fatalf("report = %s", r.Body)
	}
	for _, c := range report.Checks {
		if c.Status == "FAILURE" {
			t.Errorf("check %s failed on a correct server: %s", c.ID, c.Details)
		}
	}
	if report.Traffic.Requests == 0 || report.Traffic.Requests > report.Traffic.MaxRequests || srv.Requests() != report.Traffic.Requests {
		t.Errorf("traffic %+v, the target saw %d requests", report.Traffic, srv.Requests())
	}

	// Stored: the same report for its holder, 404 for another subject and for an unknown id.
	again := s.Must("GET", "/v1/audits/"+report.ID, nil, bearer(tok), http.StatusOK)
	if string(again.Body) != string(r.Body) {
		t.Errorf("GET differs from the POST answer:\n%s\n%s", again.Body, r.Body)
	}
	other := s.token("team-b", 600, "service:audit")
	s.Must("GET", "/v1/audits/"+report.ID, nil, bearer(other), http.StatusNotFound)
	s.Must("GET", "/v1/audits/3a1f0d7e-0000-4000-8000-000000000000", nil, bearer(tok), http.StatusNotFound)
	s.Must("GET", "/v1/audits/not-a-uuid", nil, bearer(tok), http.StatusNotFound)
	if n := s.Count("SELECT count(*) FROM audits WHERE report::text LIKE '%' || $1 || '%'", secret); n != 0 {
		t.Error("the caller's header was stored")
	}
	if strings.Contains(s.Logs.String(), secret) {
		t.Error("the caller's header was logged")
	}
}

func TestAuditReadinessRoundTrip(t *testing.T) {
	srv := fixtures.Serve(audittest.Correct())
	defer srv.Close()
	s := startAuditor(t, srv.Port)
	tok := s.token("team-a", 600, "service:readiness")
	r := s.Must("POST", "/v1/audits/readiness", map[string]any{"url": srv.URL}, bearer(tok), http.StatusOK)
	var report struct {
		ID              string           `json:"id"`
		Kind            string           `json:"kind"`
		Score           *int             `json:"score"`
		ProductionReady *bool            `json:"production_ready"`
		Findings        []map[string]any `json:"findings"`
		Rules           []map[string]any `json:"rules"`
		Latency         map[string]map[string]any
		Verdict         *string `json:"verdict"`
	}
	r.Decode(t, &report)
	if report.Kind != "readiness" || report.Score == nil || *report.Score != 100 || report.ProductionReady == nil || !*report.ProductionReady || report.Verdict != nil {
		t.Fatalf("report = %s", r.Body)
	}
	if len(report.Rules) < 15 || report.Latency["initialize"]["samples"] == nil {
		t.Errorf("rules %d, latency %v", len(report.Rules), report.Latency)
	}
	s.Must("GET", "/v1/audits/"+report.ID, nil, bearer(tok), http.StatusOK)
	// Either scope reads a report of its holder.
	both := s.token("team-a", 600, "service:audit")
	s.Must("GET", "/v1/audits/"+report.ID, nil, bearer(both), http.StatusOK)
}

func TestAuditTargetDownIsAFinding(t *testing.T) {
	srv := fixtures.Serve(audittest.Correct())
	u, _ := url.Parse(srv.URL)
	srv.Close()
	port, _ := strconv.Atoi(u.Port())
	s := startAuditor(t, port)
	tok := s.token("ci", 600, "service:audit")
	r := s.Must("POST", "/v1/audits/mcp", map[string]any{"url": u.String()}, bearer(tok), http.StatusOK)
	var report struct {
		Verdict string
		Eras    []struct{ Era, Status string }
	}
	if err := json.Unmarshal([]byte(r.Body), &report); err != nil {
		t.Fatal(err)
	}
	if report.Verdict != "fail" || len(report.Eras) != 2 || report.Eras[0].Status != "broken" {
		t.Errorf("a target that is down: %s", r.Body)
	}
}

func TestAuditStorageOutageIs503(t *testing.T) {
	srv := fixtures.Serve(audittest.Correct())
	defer srv.Close()
	s := startAuditor(t, srv.Port)
	tok := s.token("ci", 600, "service:audit")
	if _, err := s.Pool.Exec(t.Context(), "ALTER TABLE audits RENAME TO audits_away"); err != nil {
		t.Fatal(err)
	}
	r := s.Do("POST", "/v1/audits/mcp", map[string]any{"url": srv.URL}, bearer(tok))
	d, _ := r.Object(t)["detail"].(map[string]any)
	if r.Status != http.StatusServiceUnavailable || d["error"] != "service_dependency_unavailable" {
		t.Fatalf("an audit that cannot be stored: %d %s, want 503 service_dependency_unavailable", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "audits") || strings.Contains(string(r.Body), "SQLSTATE") {
		t.Errorf("the 503 names the database's error: %s", r.Body)
	}
}
