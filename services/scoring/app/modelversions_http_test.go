package app_test

import "testing"

// TestModelVersionsOverHTTP: the second generation answers a pin, the default stays the published
// version until SCORING_*_MODEL_VERSION moves it, and GET /v1/models serves both versions' cards.
func TestModelVersionsOverHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		def  map[string]string
	}{
		{"spec defaults", nil, map[string]string{"healthcare.denial": "0.3.3", "healthcare.prior_auth": "0.2.3-prior-auth-on-file", "healthcare.reimbursement": "0.2.1"}},
		{"moved", map[string]string{"SCORING_DENIAL_MODEL_VERSION": "0.3.4", "SCORING_PRIOR_AUTH_MODEL_VERSION": "0.2.4-prior-auth-on-file",
			"SCORING_REIMBURSEMENT_MODEL_VERSION": "0.2.2"},
			map[string]string{"healthcare.denial": "0.3.4", "healthcare.prior_auth": "0.2.4-prior-auth-on-file", "healthcare.reimbursement": "0.2.2"}},
	} {
		s := startService(t, tc.env)
		key := bearer(s.paidKey())
		for wf, want := range tc.def {
			r := s.Do("POST", "/v1/score", map[string]any{"workflow": wf, "payload": denialClaim()}, key)
			if r.Status != 200 || r.Object(t)["model_version"] != want {
				t.Errorf("%s, %s without a pin: got %d %s, want model_version %s", tc.name, wf, r.Status, r.Body, want)
			}
		}
		r := s.Do("GET", "/v1/workflows", nil, key)
		for _, w := range r.Object(t)["workflows"].([]any) {
			w := w.(map[string]any)
			if w["model_version"] != tc.def[w["workflow"].(string)] {
				t.Errorf("%s: /v1/workflows lists %v", tc.name, w)
			}
		}
		for _, pin := range []struct{ wf, version string }{
			{"healthcare.denial", "0.3.4"}, {"healthcare.denial", "0.3.3"}, {"healthcare.prior_auth", "0.2.4-prior-auth-on-file"},
			{"healthcare.reimbursement", "0.2.2"}, {"healthcare.reimbursement", "0.2.1"},
		} {
			r := s.Do("POST", "/v1/score", map[string]any{"workflow": pin.wf, "payload": denialClaim(),
				"options": map[string]any{"model_version": pin.version, "allow_fallback": false}}, key)
			if r.Status != 200 || r.Object(t)["model_version"] != pin.version {
				t.Errorf("%s, pin %s %s: got %d %s", tc.name, pin.wf, pin.version, r.Status, r.Body)
			}
		}
	}
	s := startService(t, nil)
	r := s.Do("GET", "/v1/models", nil, bearer(s.paidKey()))
	if r.Status != 200 {
		t.Fatalf("GET /v1/models: %d %s", r.Status, r.Body)
	}
	seen := map[string]int{}
	for _, m := range r.Object(t)["models"].([]any) {
		m := m.(map[string]any)
		seen[m["model_version"].(string)]++
		metrics, _ := m["metrics"].(map[string]any)
		if m["model_version"] == "0.3.4" && (metrics["auc_ratio_to_payload_only"] == nil || metrics["over_limit_fresh_seed_observed_rate"] == nil) {
			t.Errorf("card 0.3.4 %v: metrics %v lack the oracle figures", m["distribution_profile"], metrics)
		}
	}
	for v, n := range map[string]int{"0.3.3": 3, "0.3.4": 3, "0.2.3-prior-auth-on-file": 1, "0.2.4-prior-auth-on-file": 1, "0.2.1": 1, "0.2.2": 1} {
		if seen[v] != n {
			t.Errorf("GET /v1/models: got %d cards of %s, want %d (all: %v)", seen[v], v, n, seen)
		}
	}
}
