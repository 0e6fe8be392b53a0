package app_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

// metricsKey issues a paid key with the metrics:read scope.
func (s *stack) metricsKey() string {
	s.t.Helper()
	r := s.Do("POST", "/v1/apikeys/issue", map[string]any{"plan": "paid", "scopes": []string{"metrics:read"}}, admin)
	if r.Status != 201 {
		s.t.Fatalf("metrics key: %d %s", r.Status, r.Body)
	}
	return r.Object(s.t)["api_key"].(string)
}

// Not parallel: the decision counter is created from the process-wide OpenTelemetry meter provider,
// which every in-process service replaces as it starts. Parallel tests wait until this one is done.
func TestMetricsPrometheusAndSnapshot(t *testing.T) {
	s := startService(t, map[string]string{"SCORING_TRUSTED_PROXY_HOPS": "1"})
	key := s.paidKey()
	if r := s.scoreDenial(key); r.Status != 200 {
		t.Fatalf("score: %d %s", r.Status, r.Body)
	}

	// GET /metrics from loopback: the text format 0.0.4, even for a scraper that prefers OpenMetrics.
	r := s.Do("GET", "/metrics", nil, map[string]string{"Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("/metrics: %d, Content-Type %q, want 200 text/plain; version=0.0.4; charset=utf-8", r.Status, r.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`(?m)^scoring_decisions_total\{[^}]*route_id="unified_score"[^}]*workflow="healthcare.denial"[^}]*\} 1$`,
		`(?m)^go_goroutines \d+`,
		`(?m)^process_cpu_seconds_total `,
		`(?m)^http_server_request_duration_seconds_count\{`,
	} {
		if !regexp.MustCompile(want).Match(r.Body) {
			t.Errorf("/metrics lacks a line matching %s", want)
		}
	}
	// Behind the one trusted proxy, the caller it reports decides; a public caller is refused.
	r = s.Do("GET", "/metrics", nil, map[string]string{"X-Forwarded-For": "203.0.113.7"})
	if r.Status != 403 || r.Object(t)["detail"] != "GET /metrics is answered to private-network callers only" {
		t.Fatalf("/metrics for a public caller behind the proxy: %d %s, want 403 with a detail", r.Status, r.Body)
	}
	if r := s.Do("GET", "/metrics", nil, map[string]string{"X-Forwarded-For": "10.1.2.3"}); r.Status != 200 {
		t.Fatalf("/metrics for a private caller behind the proxy: got %d, want 200", r.Status)
	}

	// GET /metrics.json repeats the same counters and adds the persisted usage of the month.
	mkey := s.metricsKey()
	var snap map[string]any
	eventually(t, "the call in the snapshot's persisted usage", func() bool {
		r := s.Do("GET", "/metrics.json", nil, bearer(mkey))
		if r.Status != 200 {
			t.Fatalf("/metrics.json: %d %s", r.Status, r.Body)
		}
		snap = r.Object(t)
		return snap["usage"].(map[string]any)["billable_calls"] == 1.0
	})
	if snap["metrics_schema_version"] != 1.0 || snap["service"] != "scoring" {
		t.Errorf("snapshot: metrics_schema_version %v service %v, want 1 and scoring", snap["metrics_schema_version"], snap["service"])
	}
	calls := snap["scoring_calls"].(map[string]any)
	byRoute := calls["by_route"].(map[string]any)
	byWorkflow := calls["by_workflow"].(map[string]any)
	if calls["total"] != 1.0 || byRoute["unified_score"] != 1.0 || byRoute["denial_score"] != 0.0 || byWorkflow["healthcare.denial"] != 1.0 {
		t.Errorf("scoring_calls: got %v, want one unified_score call of healthcare.denial", calls)
	}
	usage := snap["usage"].(map[string]any)
	paid := usage["by_plan"].(map[string]any)["paid"].(map[string]any)
	if usage["meter"] != "scoring_calls" || usage["active_keys"] != 1.0 || paid["billable_calls"] != 1.0 {
		t.Errorf("usage: got %v, want one paid key with one call", usage)
	}
	if snap["http_requests"].(map[string]any)["total"].(float64) < 1 || snap["uptime_seconds"] == nil || snap["build"] == nil {
		t.Errorf("snapshot lacks http_requests, uptime or build: %s", mustJSON(snap))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMetricsJSONNeedsTheScope(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
		detail string
	}{
		{"no key", nil, 401, "Missing bearer token"},
		{"unknown key", bearer("sk_" + strings.Repeat("0", 43)), 401, "Invalid or revoked API key"},
		{"key without the scope", bearer(s.paidKey()), 403, "This API key lacks the metrics:read scope"},
		{"trial key", bearer(s.trialKey()), 403, "This API key lacks the metrics:read scope"},
		{"key with the scope", bearer(s.metricsKey()), 200, ""},
		{"key with the scope in x-service-api-key", map[string]string{"X-Service-Api-Key": s.metricsKey()}, 200, ""},
	} {
		r := s.Do("GET", "/metrics.json", nil, tc.header)
		if r.Status != tc.status {
			t.Errorf("%s: got %d %s, want %d", tc.name, r.Status, r.Body, tc.status)
			continue
		}
		if tc.detail != "" && r.Object(t)["detail"] != tc.detail {
			t.Errorf("%s: body %s, want detail %q", tc.name, r.Body, tc.detail)
		}
		if tc.status == 200 && r.Object(t)["metrics_schema_version"] != 1.0 {
			t.Errorf("%s: body %s, want metrics_schema_version 1", tc.name, r.Body)
		}
	}
}

// TestOpenAPICoversEveryRoute reads the routes from the server itself (gateway rules of every
// registered service and every plain handler), so a route added without documentation fails here.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	r := s.Do("GET", "/openapi.json", nil, nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi.json: %d %q", r.Status, r.Header.Get("Content-Type"))
	}
	var doc struct {
		Paths           map[string]map[string]map[string]any `json:"paths"`
		WorkflowSchemas map[string]any                       `json:"x-workflowSchemas"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	// Both ways: a route served without documentation, and documentation of a route not served.
	apidoc.CheckRoutes(t, r.Body, s.Platform.Server.Routes())

	// Billable: exactly the scoring routes (README "Keys, limits and metering") and the agent endpoint, whose
	// score_workflow calls the unified route in process; each on the scoring_calls meter.
	wantBillable := []string{
		"POST /mcp", "POST /v1/claims/denial/score", "POST /v1/claims/prior-auth/predict", "POST /v1/claims/reimbursement/estimate",
		"POST /v1/score", "POST /v1/score/batch",
	}
	var billable []string
	for p, ops := range doc.Paths {
		for method, op := range ops {
			b, ok := op["x-billable"].(bool)
			if !ok {
				t.Errorf("%s %s has no x-billable", strings.ToUpper(method), p)
			}
			if b {
				billable = append(billable, strings.ToUpper(method)+" "+p)
				if op["x-meter"] != "scoring_calls" {
					t.Errorf("%s %s: x-meter %v, want scoring_calls", strings.ToUpper(method), p, op["x-meter"])
				}
			}
		}
	}
	slices.Sort(billable)
	if !slices.Equal(billable, wantBillable) {
		t.Errorf("billable operations: got %v, want %v", billable, wantBillable)
	}

	// x-workflowSchemas holds the schemas GET /v1/workflows/{workflow}/schema serves.
	key := s.paidKey()
	for _, w := range []string{"healthcare.denial", "healthcare.prior_auth", "healthcare.reimbursement"} {
		sr := s.Do("GET", "/v1/workflows/"+w+"/schema", nil, bearer(key))
		if sr.Status != 200 {
			t.Fatalf("schema of %s: %d", w, sr.Status)
		}
		if got, want := doc.WorkflowSchemas[w], sr.Object(t)["request_schema"]; !reflect.DeepEqual(got, want) {
			t.Errorf("x-workflowSchemas[%s] differs from the served request_schema", w)
		}
	}
	if len(doc.WorkflowSchemas) != 3 {
		t.Errorf("x-workflowSchemas has %d workflows, want 3", len(doc.WorkflowSchemas))
	}
}

// TestReadyzFollowsTheDatabase: README "Operations": /readyz is 503 while the database is unreachable.
func TestReadyzFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	proxy, dbURL := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	env := testEnv(t, nil)
	env["SCORING_DATABASE_URL"] = dbURL
	s := startWithEnv(t, env)
	if r := s.Do("GET", "/readyz", nil, nil); r.Status != 200 {
		t.Fatalf("/readyz with the database up: %d %s", r.Status, r.Body)
	}
	proxy.Cut()
	r := s.Do("GET", "/readyz", nil, nil)
	if r.Status != http.StatusServiceUnavailable || string(r.Body) != `{"checks":{"database":"unavailable"},"status":"not_ready"}`+"\n" {
		t.Fatalf("/readyz with the database cut: %d %s, want 503 not_ready", r.Status, r.Body)
	}
	if r := s.Do("GET", "/health", nil, nil); r.Status != 200 {
		t.Errorf("/health with the database cut: got %d, want 200 (liveness does not follow the database)", r.Status)
	}
	proxy.Restore()
	eventually(t, "/readyz back to 200", func() bool { return s.Do("GET", "/readyz", nil, nil).Status == 200 })
}
