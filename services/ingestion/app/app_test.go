package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
)

const policyV1 = `<html><head><title>Outpatient Advanced Imaging</title><style>p{margin:0}</style></head><body>
<nav>Home | Provider policies</nav>
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

const policyV2 = `<html><head><title>Outpatient Advanced Imaging</title></head><body>
<nav>Home | Provider policies</nav>
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

// policyV2Rerendered has policyV2's text in other markup: not a change.
const policyV2Rerendered = `<!DOCTYPE html><html><body><div class="page">
<header><nav>Home | Provider policies</nav></header>
<main><h1 class="title">Outpatient   Advanced Imaging Policy</h1>
<div><p class="date">Effective Date: <b>March 1, 2026</b></p></div>
<section><h2>Coverage</h2>
<p>MRI of the brain without and with contrast (CPT 70553) is covered when <em>medically necessary</em>.</p></section>
<section><h2>Prior Authorization</h2>
<p>Prior authorization is required for MRI of the brain (CPT 70553) in all outpatient settings.</p>
<p>Prior authorization is required for MRI of the lumbar spine (CPT 72148) in all outpatient settings.</p></section>
<section><h2>Criteria</h2><p>Imaging must follow four weeks of documented conservative therapy.</p></section>
</main></div></body></html>`

func TestAdminTokenGate(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	for _, path := range []string{"/v1/sources", "/v1/change-events", "/v1/sources/0190a0b0-0000-7000-8000-000000000000"} {
		for _, token := range []string{"", "wrong-token-of-some-length"} {
			r := s.call("GET", path, nil, token)
			if r.Status != http.StatusUnauthorized {
				t.Errorf("GET %s with token %q: got %d, want 401", path, token, r.Status)
				continue
			}
			if d, _ := r.Object(t)["detail"].(string); !strings.Contains(d, "X-Admin-Token") {
				t.Errorf("GET %s: 401 body %s should name the header", path, r.Body)
			}
		}
	}
	if r := s.call("POST", "/v1/sources", map[string]any{}, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("POST /v1/sources without token: got %d, want 401 (before validation)", r.Status)
	}
	s.admin("GET", "/v1/sources", nil, http.StatusOK)
	for _, path := range []string{"/v1/build", "/healthz", "/readyz"} {
		if r := s.call("GET", path, nil, ""); r.Status != http.StatusOK {
			t.Errorf("GET %s without token: got %d, want 200", path, r.Status)
		}
	}
}

func TestRegisterSourceValidation(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	valid := map[string]any{
		"organization": "Acme", "program": "Commercial", "jurisdiction": "US-CA", "allowed_hosts": []string{"docs.acme.example"},
		"adapter": "literal_url", "adapter_config": map[string]any{"url": "https://docs.acme.example/policy.pdf"},
		"cadence_seconds": 86400, "terms_review_state": "approved",
	}
	tests := []struct {
		name    string
		change  map[string]any
		wantLoc string
	}{
		{"missing organization", map[string]any{"organization": ""}, "body.organization"},
		{"organization over 200 characters", map[string]any{"organization": strings.Repeat("é", 201)}, "body.organization"},
		{"no allowlist", map[string]any{"allowed_hosts": []string{}}, "body.allowed_hosts"},
		{"allowlist entry with a scheme", map[string]any{"allowed_hosts": []string{"https://docs.acme.example"}}, "body.allowed_hosts"},
		{"unknown adapter", map[string]any{"adapter": "ftp"}, "body.adapter"},
		{"URL off the allowlist", map[string]any{"adapter_config": map[string]any{"url": "https://evil.example/x"}}, "body.adapter_config.url"},
		{"URL that is not http(s)", map[string]any{"adapter_config": map[string]any{"url": "file:///etc/passwd"}}, "body.adapter_config.url"},
		{"cadence too short", map[string]any{"cadence_seconds": 10}, "body.cadence_seconds"},
		{"unknown terms state", map[string]any{"terms_review_state": "maybe"}, "body.terms_review_state"},
		{"index page without pattern", map[string]any{"adapter": "index_page", "adapter_config": map[string]any{"index_url": "https://docs.acme.example/"}}, "body.adapter_config.link_pattern"},
		{"index page with a bad pattern", map[string]any{"adapter": "index_page", "adapter_config": map[string]any{"index_url": "https://docs.acme.example/", "link_pattern": "("}}, "body.adapter_config.link_pattern"},
		{"private address literal", map[string]any{"allowed_hosts": []string{"10.0.0.8"}, "adapter_config": map[string]any{"url": "http://10.0.0.8/p"}}, "body.adapter_config.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{}
			for k, v := range valid {
				body[k] = v
			}
			for k, v := range tt.change {
				body[k] = v
			}
			r := s.call("POST", "/v1/sources", body, adminToken)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("got %d %s, want 422", r.Status, r.Body)
			}
			detail, _ := r.Object(t)["detail"].([]any)
			var locs []string
			for _, d := range detail {
				m, _ := d.(map[string]any)
				var parts []string
				for _, l := range m["loc"].([]any) {
					parts = append(parts, fmt.Sprint(l))
				}
				locs = append(locs, strings.Join(parts, "."))
				if m["msg"] == "" || m["type"] == "" {
					t.Errorf("violation without msg or type: %v", m)
				}
			}
			if !slices.Contains(locs, tt.wantLoc) {
				t.Errorf("locations %v do not include %s", locs, tt.wantLoc)
			}
		})
	}
	if r := s.call("POST", "/v1/sources", map[string]any{}, adminToken); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("empty body: got %d, want 422", r.Status)
	}
	created := s.admin("POST", "/v1/sources", valid, http.StatusCreated)
	if created["health_status"] != "NEW" || created["enabled"] != true || created["id"] == "" {
		t.Errorf("created source: got %v", created)
	}
	// The limit counts characters: 200 two-byte ones pass.
	long := map[string]any{}
	for k, v := range valid {
		long[k] = v
	}
	long["organization"] = strings.Repeat("é", 200)
	s.admin("POST", "/v1/sources", long, http.StatusCreated)
}

func TestSourceReadsAndPagination(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	var ids []string
	for i := range 3 {
		src := s.literalSource(fmt.Sprintf("/p%d.html", i), nil)
		ids = append(ids, src["id"].(string))
	}
	got := s.admin("GET", "/v1/sources/"+ids[0], nil, http.StatusOK)
	if got["id"] != ids[0] || got["organization"] != "Acme Health Plan" {
		t.Errorf("GET source: got %v", got)
	}
	for _, missing := range []string{"0190a0b0-0000-7000-8000-000000000000", "does-not-exist"} {
		if r := s.call("GET", "/v1/sources/"+missing, nil, adminToken); r.Status != http.StatusNotFound {
			t.Errorf("GET unknown source %s: got %d, want 404", missing, r.Status)
		}
		if r := s.call("GET", "/v1/sources/"+missing+"/status", nil, adminToken); r.Status != http.StatusNotFound {
			t.Errorf("GET unknown source status: got %d, want 404", r.Status)
		}
		if r := s.call("POST", "/v1/sources/"+missing+"/discovery-runs", map[string]any{}, adminToken); r.Status != http.StatusNotFound {
			t.Errorf("POST run of unknown source: got %d, want 404", r.Status)
		}
	}
	page1 := s.admin("GET", "/v1/sources?limit=2", nil, http.StatusOK)
	items := page1["items"].([]any)
	cursor, _ := page1["next_cursor"].(string)
	if len(items) != 2 || cursor == "" {
		t.Fatalf("page 1: got %d items, cursor %q; want 2 and a cursor", len(items), cursor)
	}
	page2 := s.admin("GET", "/v1/sources?limit=2&cursor="+cursor, nil, http.StatusOK)
	items2 := page2["items"].([]any)
	if len(items2) != 1 || page2["next_cursor"] != "" {
		t.Fatalf("page 2: got %d items, cursor %v; want 1 and none", len(items2), page2["next_cursor"])
	}
	seen := map[string]bool{}
	for _, it := range append(items, items2...) {
		seen[it.(map[string]any)["id"].(string)] = true
	}
	if len(seen) != 3 || items[0].(map[string]any)["id"] != ids[2] {
		t.Errorf("pages: got %v, want all three sources, newest first", seen)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=abc", "cursor=not-a-cursor"} {
		if r := s.call("GET", "/v1/sources?"+q, nil, adminToken); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("GET /v1/sources?%s: got %d, want 422", q, r.Status)
		}
	}
	st := s.admin("GET", "/v1/sources/"+ids[0]+"/status", nil, http.StatusOK)
	if st["health_status"] != "NEW" || st["source_id"] != ids[0] {
		t.Errorf("status before any run: got %v", st)
	}
}

func TestDiscoveryPipeline(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.docs.set("/imaging.html", page{body: policyV1})
	src := s.literalSource("/imaging.html", nil)
	runs := "/v1/sources/" + src["id"].(string) + "/discovery-runs"

	// Version 1: archived, first version, nothing to compare with yet.
	run := s.admin("POST", runs, map[string]any{}, http.StatusCreated)
	res := firstResource(t, run)
	if run["status"] != "SUCCEEDED" || run["trigger"] != "manual" || res["new_asset"] != true || res["new_version"] != true {
		t.Fatalf("first run: got %v", run)
	}
	policyID := res["policy_id"].(string)

	// The same bytes again: a new observation, no new asset, no new version.
	run = s.admin("POST", runs, map[string]any{}, http.StatusCreated)
	res = firstResource(t, run)
	if res["new_asset"] != false || res["new_version"] != false {
		t.Fatalf("unchanged run: got %v", res)
	}
	if got := s.Count(`SELECT count(*) FROM document_observations WHERE policy_id = $1`, policyID); got != 2 {
		t.Errorf("observations: got %d, want 2 (one per fetch)", got)
	}
	if got := s.Count(`SELECT count(*) FROM document_assets`); got != 1 {
		t.Errorf("assets: got %d, want 1 (identical bytes never archived twice)", got)
	}
	var status, headers, timings string
	if err := s.Pool.QueryRow(context.Background(), `SELECT http_status::text, headers::text, timings_ms::text FROM document_observations WHERE policy_id = $1 LIMIT 1`, policyID).
		Scan(&status, &headers, &timings); err != nil || status != "200" || !strings.Contains(headers, "Content-Type") || !strings.Contains(timings, "total") {
		t.Errorf("observation metadata: status %s headers %s timings %s (%v)", status, headers, timings, err)
	}

	// Version 2: facts from the difference, each with its change event.
	s.docs.set("/imaging.html", page{body: policyV2})
	run = s.admin("POST", runs, map[string]any{}, http.StatusCreated)
	res = firstResource(t, run)
	if res["new_version"] != true || res["facts"].(float64) < 3 {
		t.Fatalf("changed run: got %v, want a new version with facts", res)
	}
	pol := s.admin("GET", "/v1/policies/"+policyID, nil, http.StatusOK)
	versions := pol["versions"].([]any)
	if len(versions) != 2 {
		t.Fatalf("versions: got %d, want 2", len(versions))
	}
	v1, v2 := versions[0].(map[string]any), versions[1].(map[string]any)
	types := map[string]bool{}
	published := 0
	for _, f := range pol["facts"].([]any) {
		fact := f.(map[string]any)
		types[fact["change_type"].(string)] = true
		ev, ok := fact["change_event"].(map[string]any)
		if !ok || ev["fact_id"] != fact["id"] || ev["change_type"] != fact["change_type"] {
			t.Errorf("fact %v has no matching nested change_event", fact["id"])
			continue
		}
		if comps := ev["confidence_components"].(map[string]any); len(comps) != 7 {
			t.Errorf("confidence components: got %d, want 7", len(comps))
		}
		switch fact["status"] {
		case "VERIFIED":
			span := fact["evidence_span"].(map[string]any)
			want := v2
			if fact["evidence_side"] == "previous" {
				want = v1
			}
			if span["raw_sha256"] != want["raw_sha256"] || span["canonical_content_hash"] != want["canonical_content_hash"] ||
				span["document_asset_id"] != want["document_asset_id"] || span["source_url"] != s.docs.url("/imaging.html") {
				t.Errorf("evidence span %v is not traced to the %s version %v", span, fact["evidence_side"], want)
			}
			if ev["status"] == "AUTO_PUBLISHED" {
				published++
			}
		case "NO_VERIFIABLE_EVIDENCE":
			if ev["status"] != "NO_VERIFIABLE_EVIDENCE" || fact["evidence_span"] != nil {
				t.Errorf("unverified fact: got event %v span %v", ev["status"], fact["evidence_span"])
			}
		default:
			t.Errorf("fact status %v", fact["status"])
		}
		if strings.HasSuffix(fact["change_type"].(string), "_removed") && fact["status"] == "VERIFIED" && fact["evidence_side"] != "previous" {
			t.Errorf("removal %v cites the %v version, want previous", fact["summary"], fact["evidence_side"])
		}
	}
	for _, want := range []string{"effective_date_changed", "code_added", "code_removed"} {
		if !types[want] {
			t.Errorf("change types %v lack %s", types, want)
		}
	}

	// The ledger lists every fact's event; published ones reach NATS.
	all := s.admin("GET", "/v1/change-events?limit=100", nil, http.StatusOK)["items"].([]any)
	if len(all) != len(pol["facts"].([]any)) {
		t.Errorf("ledger rows: got %d, want one per fact (%d)", len(all), len(pol["facts"].([]any)))
	}
	auto := s.admin("GET", "/v1/change-events?status=AUTO_PUBLISHED", nil, http.StatusOK)["items"].([]any)
	if len(auto) != published {
		t.Errorf("AUTO_PUBLISHED filter: got %d, want %d", len(auto), published)
	}
	if r := s.call("GET", "/v1/change-events?status=SHIPPED", nil, adminToken); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("unknown status filter: got %d, want 422", r.Status)
	}
	s.waitForPublished(published)

	// Version 2 re-rendered with other markup: same text, no new version.
	s.docs.set("/imaging.html", page{body: policyV2Rerendered})
	res = firstResource(t, s.admin("POST", runs, map[string]any{}, http.StatusCreated))
	if res["new_asset"] != true || res["new_version"] != false {
		t.Errorf("markup-only change: got %v, want a new asset but no new version", res)
	}

	// The ledger and the archive records are immutable in the database itself.
	for _, stmt := range []string{
		`UPDATE change_events SET status = 'AUTO_PUBLISHED'`, `DELETE FROM change_events`,
		`UPDATE document_assets SET size_bytes = 0`, `DELETE FROM evidence_spans`, `UPDATE document_observations SET http_status = 500`,
	} {
		if _, err := s.Pool.Exec(context.Background(), stmt); err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("%s: got %v, want the immutability trigger to reject it", stmt, err)
		}
	}
	st := s.admin("GET", "/v1/sources/"+src["id"].(string)+"/status", nil, http.StatusOK)
	if st["health_status"] != "HEALTHY" || st["last_run"].(map[string]any)["status"] != "SUCCEEDED" {
		t.Errorf("status after successful runs: got %v", st)
	}
}

// waitForPublished waits until the stream holds n change events and checks their payloads.
func (s *stack) waitForPublished(n int) {
	s.t.Helper()
	ctx := context.Background()
	stream, err := s.Bus.JS.Stream(ctx, s.Bus.StreamName("POLICY_CHANGES"))
	if err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := stream.Info(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		if int(info.State.Msgs) == n {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stream holds %d events, want %d", info.State.Msgs, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for seq := uint64(1); seq <= uint64(n); seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			s.t.Fatal(err)
		}
		var ev ingestionv1.PolicyChangePublished
		if err := proto.Unmarshal(msg.Data, &ev); err != nil {
			s.t.Fatal(err)
		}
		if msg.Subject != s.Bus.Subject("policy.change."+ev.GetChangeType()) || ev.GetChangeEventId() == "" ||
			msg.Header.Get("Nats-Msg-Id") != ev.GetChangeEventId() || ev.GetEvidenceQuote() == "" || ev.GetOrganization() != "Acme Health Plan" {
			s.t.Errorf("event %d: subject %s, payload %v", seq, msg.Subject, &ev)
		}
	}
}

func firstResource(t *testing.T, run map[string]any) map[string]any {
	t.Helper()
	res, _ := run["resources"].([]any)
	if len(res) == 0 {
		t.Fatalf("run has no resources: %v", run)
	}
	return res[0].(map[string]any)
}

// TestCanceledRunLeavesHealthAlone: a manual run whose caller goes away mid-fetch ends FAILED with
// error_kind canceled. It says nothing about the source: the health stays, and the source is not sent
// to review (where the scheduler would never run it again).
func TestCanceledRunLeavesHealthAlone(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.docs.set("/slow.html", page{body: policyV1, delay: 2 * time.Second})
	// Disabled, so that only the manual runs below fetch it.
	src := s.literalSource("/slow.html", map[string]any{"enabled": false})
	runs := "/v1/sources/" + src["id"].(string) + "/discovery-runs"
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL+runs, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Admin-Token", adminToken)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the run answered %d before its caller gave up", resp.StatusCode)
	}
	var st map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = s.admin("GET", "/v1/sources/"+src["id"].(string)+"/status", nil, http.StatusOK)
		if last, _ := st["last_run"].(map[string]any); last != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	last, _ := st["last_run"].(map[string]any)
	if last == nil || last["status"] != "FAILED" || last["error_kind"] != "canceled" {
		t.Fatalf("last run: got %v, want FAILED with error_kind canceled", st["last_run"])
	}
	if st["health_status"] != "NEW" || st["consecutive_failures"] != 0.0 {
		t.Errorf("status after a canceled run: got %v, want NEW with no failures counted", st)
	}
	// The run is recorded before its source lock is let go: wait for the lock, or the next run meets it.
	deadline = time.Now().Add(10 * time.Second)
	for s.Count(`SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
WHERE l.locktype = 'advisory' AND d.datname = current_database()`) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the canceled run's source lock was never released")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.docs.set("/slow.html", page{body: policyV1})
	if run := s.admin("POST", runs, map[string]any{}, http.StatusCreated); run["status"] != "SUCCEEDED" {
		t.Errorf("the next run: got %v, want SUCCEEDED", run)
	}
}

func TestFetchFailuresSetSourceHealth(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"INGESTION_FETCH_MAX_BYTES": "2048", "INGESTION_FETCH_MAX_ATTEMPTS": "3"})
	big := "<html><body><p>" + strings.Repeat("covered services ", 400) + "</p></body></html>"
	tests := []struct {
		name       string
		page       page
		wantHealth string
		wantHits   int // fetch attempts the document server saw
	}{
		{"HTTP 404 is permanent", page{status: 404, body: "gone"}, "REVIEW_REQUIRED", 1},
		{"HTTP 403 is permanent", page{status: 403, body: "no"}, "REVIEW_REQUIRED", 1},
		{"oversized document is permanent", page{body: big}, "REVIEW_REQUIRED", 1},
		{"disallowed MIME type is permanent", page{contentType: "application/zip", body: "PK\x03\x04zip"}, "REVIEW_REQUIRED", 1},
		{"HTTP 503 is transient and retried", page{status: 503, body: "busy"}, "DEGRADED", 3},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("/fail-%d", i)
			s.docs.set(path, tt.page)
			src := s.literalSource(path, nil)
			run := s.admin("POST", "/v1/sources/"+src["id"].(string)+"/discovery-runs", map[string]any{}, http.StatusCreated)
			if run["status"] != "FAILED" || run["error_kind"] == "" {
				t.Errorf("run: got %v, want FAILED with an error kind", run)
			}
			st := s.admin("GET", "/v1/sources/"+src["id"].(string)+"/status", nil, http.StatusOK)
			if st["health_status"] != tt.wantHealth || st["last_error"] == "" || st["consecutive_failures"].(float64) != 1 {
				t.Errorf("status: got %v, want %s with the error", st, tt.wantHealth)
			}
			if got := s.docs.hitCount(path); got != tt.wantHits {
				t.Errorf("fetch attempts: got %d, want %d", got, tt.wantHits)
			}
		})
	}
	t.Run("a host resolving to a blocked address is never dialled", func(t *testing.T) {
		// Registered while loopback was allowed; then a replica without the exception runs it, as if
		// the name had been rebound to a private address after registration.
		s.docs.set("/internal.html", page{body: policyV1})
		// Disabled, so that the new replica's scheduler leaves it to the manual run below.
		src := s.literalSource("/internal.html", map[string]any{"enabled": false})
		strict := startService(t, map[string]string{"INGESTION_ALLOW_PRIVATE_CIDRS": "", "INGESTION_DATABASE_URL": s.Env["INGESTION_DATABASE_URL"]})
		run := strict.admin("POST", "/v1/sources/"+src["id"].(string)+"/discovery-runs", map[string]any{}, http.StatusCreated)
		st := strict.admin("GET", "/v1/sources/"+src["id"].(string)+"/status", nil, http.StatusOK)
		if run["status"] != "FAILED" || run["error_kind"] != "blocked_address" || st["health_status"] != "REVIEW_REQUIRED" {
			t.Errorf("loopback without the exception: run %v, status %v", run, st)
		}
		if hits := s.docs.hitCount("/internal.html"); hits != 0 {
			t.Errorf("the blocked server saw %d requests, want 0", hits)
		}
		// Registering a loopback name without the exception is refused up front.
		r := strict.call("POST", "/v1/sources", map[string]any{
			"organization": "Acme", "program": "P", "jurisdiction": "US", "allowed_hosts": []string{"localhost"},
			"adapter": "literal_url", "adapter_config": map[string]any{"url": s.docs.url("/internal.html")},
		}, adminToken)
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("registering a loopback URL without the exception: got %d, want 422", r.Status)
		}
	})
}

func TestDiscoveryGuards(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.docs.set("/slow.html", page{body: policyV1, delay: 700 * time.Millisecond})
	pending := s.literalSource("/slow.html", map[string]any{"terms_review_state": "pending"})
	r := s.call("POST", "/v1/sources/"+pending["id"].(string)+"/discovery-runs", map[string]any{}, adminToken)
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "terms") {
		t.Errorf("run of a source whose terms are pending: got %d %s, want 409", r.Status, r.Body)
	}

	src := s.literalSource("/slow.html", nil)
	path := "/v1/sources/" + src["id"].(string) + "/discovery-runs"
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Go(func() { statuses <- s.call("POST", path, map[string]any{}, adminToken).Status })
	}
	wg.Wait()
	close(statuses)
	var got []int
	for st := range statuses {
		got = append(got, st)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{http.StatusCreated, http.StatusConflict}) {
		t.Errorf("two simultaneous runs of one source: got %v, want one 201 and one 409", got)
	}
}

func TestSchedulerRunsDueSourcesThroughTheSamePath(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"INGESTION_SCHEDULER_INTERVAL": "1s"})
	s.docs.set("/scheduled.html", page{body: policyV1})
	due := s.literalSource("/scheduled.html", nil)
	s.literalSource("/scheduled.html", map[string]any{"enabled": false})
	s.literalSource("/scheduled.html", map[string]any{"terms_review_state": "pending"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := s.admin("GET", "/v1/sources/"+due["id"].(string)+"/status", nil, http.StatusOK)
		if run, ok := st["last_run"].(map[string]any); ok {
			if run["trigger"] != "scheduled" || run["status"] != "SUCCEEDED" || st["health_status"] != "HEALTHY" {
				t.Fatalf("scheduled run: got %v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the scheduler never ran the due source")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The source is not due again before its cadence (an hour), and the others never are.
	time.Sleep(2500 * time.Millisecond)
	if got := s.Count(`SELECT count(*) FROM discovery_runs`); got != 1 {
		t.Errorf("discovery runs: got %d, want exactly 1", got)
	}
}

func TestIndexPageAdapter(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.docs.set("/policies/", page{body: fmt.Sprintf(`<html><body><ul>
<li><a href="/policies/imaging.html">Imaging</a></li>
<li><a href="%s">Lab (absolute)</a></li>
<li><a href="/policies/imaging.html#top">Imaging again</a></li>
<li><a href="/news/2026.html">News</a></li>
<li><a href="https://elsewhere.example/policies/x.html">Off the allowlist</a></li>
</ul></body></html>`, s.docs.url("/policies/lab.html"))})
	s.docs.set("/policies/imaging.html", page{body: policyV1})
	s.docs.set("/policies/lab.html", page{contentType: "text/plain; charset=utf-8", body: "Laboratory Policy\n\nCPT 80053 is covered once per year."})
	src := s.admin("POST", "/v1/sources", map[string]any{
		"organization": "Acme", "program": "Commercial", "jurisdiction": "US-CA", "allowed_hosts": []string{"localhost"},
		"adapter": "index_page", "adapter_config": map[string]any{"index_url": s.docs.url("/policies/"), "link_pattern": `/policies/[a-z]+\.html$`},
		"terms_review_state": "approved",
	}, http.StatusCreated)
	if src["adapter_config"].(map[string]any)["max_documents"].(float64) != 20 {
		t.Errorf("max_documents default: got %v", src["adapter_config"])
	}
	run := s.admin("POST", "/v1/sources/"+src["id"].(string)+"/discovery-runs", map[string]any{}, http.StatusCreated)
	var urls []string
	for _, r := range run["resources"].([]any) {
		res := r.(map[string]any)
		urls = append(urls, res["url"].(string))
		if res["new_version"] != true {
			t.Errorf("%s: got %v, want a first version", res["url"], res)
		}
	}
	want := []string{s.docs.url("/policies/imaging.html"), s.docs.url("/policies/lab.html")}
	if run["status"] != "SUCCEEDED" || !slices.Equal(urls, want) {
		t.Errorf("discovered: got %v (%v), want %v", urls, run["status"], want)
	}
}
