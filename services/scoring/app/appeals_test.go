package app_test

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppeals(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := bearer(s.trialKey())
	body := map[string]any{
		"claim":               with(denialClaim(), "patient_id", "PT-778812"),
		"denial_reason_codes": []string{"CO-50", "co 197"},
		"denial_date":         "2026-10-20",
		"payer_class":         "commercial",
		"payer_name":          "Acme Health Plan",
	}
	if r := s.Do("POST", "/v1/claims/appeals/generate", body, nil); r.Status != 401 {
		t.Fatalf("appeal without a key: %d", r.Status)
	}
	first := s.Do("POST", "/v1/claims/appeals/generate", body, key)
	if first.Status != 200 {
		t.Fatalf("appeal: %d %s", first.Status, first.Body)
	}
	a := first.Object(t)
	if a["generator_version"] != "0.1.2" || !strings.HasPrefix(a["appeal_id"].(string), "apl_") || a["priority"] != "high" {
		t.Fatalf("appeal header: %v", a)
	}
	codes := a["reason_codes"].([]any)
	if len(codes) != 2 || codes[1].(map[string]any)["code"] != "CO-197" || codes[1].(map[string]any)["category"] != "prior_authorization" {
		t.Fatalf("reason codes: %v", codes)
	}
	if d := a["appeal_deadline"].(map[string]any); d["date"] != "2027-04-18" || d["window_days"] != 180.0 {
		t.Fatalf("deadline: %v", d)
	}
	if bytes.Contains(first.Body, []byte("PT-778812")) {
		t.Fatal("the appeal echoes the patient id")
	}
	// Deterministic: the same context gives the same bytes.
	if again := s.Do("POST", "/v1/claims/appeals/generate", body, key); !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("not deterministic:\n%s\n%s", first.Body, again.Body)
	}
	for name, bad := range map[string]map[string]any{
		"malformed code": with(body, "denial_reason_codes", []string{"fifty"}),
		"no codes":       with(body, "denial_reason_codes", []string{}),
		"claim field":    with(body, "claim", with(denialClaim(), "cpt_code", "9")),
	} {
		r := s.Do("POST", "/v1/claims/appeals/generate", bad, key)
		if _, ok := r.Object(t)["detail"].(string); r.Status != 422 || !ok {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// Appeals are not billable.
	if u := s.Do("GET", "/v1/usage", nil, key).Object(t); u["billable_calls"] != 0.0 {
		t.Fatalf("appeals billed: %v", u)
	}
}
