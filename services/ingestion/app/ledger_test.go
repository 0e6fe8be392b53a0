package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestDiscoveryPipeline runs discovery over successive versions of one document and reads what it
// recorded through the ledger routes (GET /v1/policies/{id}, GET /v1/change-events) and on NATS.
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
