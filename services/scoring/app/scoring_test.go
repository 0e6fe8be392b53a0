package app_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestWorkflowDiscoveryAndValidation(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := bearer(s.paidKey())

	if r := s.Do("GET", "/health", nil, nil); r.Status != 200 || r.Object(t)["status"] != "ok" {
		t.Fatalf("GET /health: %d %s", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/no-such-route", nil, key); r.Status != 404 || r.Object(t)["detail"] != "Not Found" {
		t.Fatalf("unknown route: %d %s", r.Status, r.Body)
	}
	r := s.Do("GET", "/v1/workflows", nil, nil)
	if r.Status != 401 {
		t.Fatalf("workflows without bearer: got %d, want 401", r.Status)
	}
	if d, ok := r.Object(t)["detail"].(string); !ok || d == "" {
		t.Fatalf("401 body %s: want a string detail", r.Body)
	}
	if r := s.Do("GET", "/v1/workflows", nil, bearer("sk_not-a-key")); r.Status != 401 {
		t.Fatalf("workflows with an unknown key: got %d, want 401", r.Status)
	}

	r = s.Do("GET", "/v1/workflows", nil, key)
	var index struct {
		Workflows []struct {
			Workflow     string `json:"workflow"`
			ModelVersion string `json:"model_version"`
		}
	}
	if err := json.Unmarshal(r.Body, &index); err != nil || r.Status != 200 {
		t.Fatalf("workflows: %d %s", r.Status, r.Body)
	}
	var ids []string
	for _, w := range index.Workflows {
		ids = append(ids, w.Workflow)
	}
	if want := []string{"healthcare.denial", "healthcare.prior_auth", "healthcare.reimbursement"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("workflow ids: got %v, want %v", ids, want)
	}

	r = s.Do("GET", "/v1/workflows/healthcare.denial/schema", nil, key)
	schema := r.Object(t)
	required, _ := schema["required_fields"].([]any)
	if r.Status != 200 || len(required) != 7 || schema["example"] == nil || schema["request_schema"] == nil {
		t.Fatalf("denial schema: %d %s", r.Status, r.Body)
	}
	// The example validates: a newcomer can paste it.
	if v := s.Do("POST", "/v1/workflows/healthcare.denial/validate", schema["example"], key); v.Status != 200 {
		t.Fatalf("example does not validate: %d %s", v.Status, v.Body)
	}
	if r := s.Do("GET", "/v1/workflows/healthcare.dental/schema", nil, key); r.Status != 404 {
		t.Fatalf("unknown workflow schema: got %d, want 404", r.Status)
	}

	r = s.Do("POST", "/v1/workflows/healthcare.denial/validate", with(denialClaim(), "icd10_code", "e119"), key)
	body := r.Object(t)
	norm, _ := body["normalized_payload"].(map[string]any)
	if r.Status != 200 || body["valid"] != true || norm["icd10_code"] != "E11.9" || body["billable"] != false {
		t.Fatalf("validate normalises: %d %s", r.Status, r.Body)
	}
	r = s.Do("POST", "/v1/workflows/healthcare.denial/validate", with(denialClaim(), "place_of_service", "office", "icd10_code", "e119"), key)
	body = r.Object(t)
	if r.Status != 422 || !strings.Contains(body["detail"].(string), "place_of_service") || body["valid"] != false {
		t.Fatalf("validate office: %d %s", r.Status, r.Body)
	}
	// The fields that passed come back normalised; the failing one is left out.
	norm, _ = body["normalized_payload"].(map[string]any)
	if _, bad := norm["place_of_service"]; norm["icd10_code"] != "E11.9" || bad {
		t.Fatalf("validate office: normalized_payload %v", body["normalized_payload"])
	}
	errs, _ := body["errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["field"] != "place_of_service" {
		t.Fatalf("validate office errors: %s", r.Body)
	}
	// Validation is not billable.
	usage := s.Do("GET", "/v1/usage", nil, key).Object(t)
	if usage["billable_calls"] != float64(0) {
		t.Fatalf("usage after validation only: %v", usage)
	}
}

// scoreFields are exactly the fields of README "Score response".
var scoreFields = []string{"confidence", "details", "explanation", "model_version", "risk_level", "score", "scored_at", "workflow"}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestScoreResponses(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := bearer(s.paidKey())

	for _, tc := range []struct {
		workflow, version, detailsKey string
		payload                       map[string]any
	}{
		{"healthcare.denial", "0.3.3", "denial", denialClaim()},
		{"healthcare.prior_auth", "0.2.3-prior-auth-on-file", "prior_auth", denialClaim()},
		{"healthcare.reimbursement", "0.2.1", "reimbursement", with(denialClaim(), "units", 2, "service_date", nil, "network_status", nil)},
	} {
		t.Run(tc.workflow, func(t *testing.T) {
			r := s.Do("POST", "/v1/score", map[string]any{"workflow": tc.workflow, "payload": tc.payload}, key)
			j := r.Object(t)
			if r.Status != 200 {
				t.Fatalf("score: %d %s", r.Status, r.Body)
			}
			if got := keysOf(j); !reflect.DeepEqual(got, scoreFields) {
				t.Fatalf("fields: got %v, want %v", got, scoreFields)
			}
			if r.Header.Get("x-request-id") == "" {
				t.Fatal("no x-request-id header")
			}
			if j["workflow"] != tc.workflow || j["model_version"] != tc.version {
				t.Fatalf("workflow/version: %v %v", j["workflow"], j["model_version"])
			}
			details := j["details"].(map[string]any)
			if got := keysOf(details); !reflect.DeepEqual(got, []string{tc.detailsKey, "workflow"}) {
				t.Fatalf("details keys: got %v", got)
			}
			if _, ok := j["explanation"].(map[string]any)["top_factors"].([]any); !ok {
				t.Fatalf("top_factors: %v", j["explanation"])
			}
			score := j["score"].(float64)
			if score < 0 || score > 1 {
				t.Fatalf("score %v outside [0,1]", score)
			}
			if !slices.Contains([]string{"high", "medium", "low"}, j["risk_level"].(string)) {
				t.Fatalf("risk_level %v", j["risk_level"])
			}
			// Same input, same version: the same answer but for scored_at.
			again := s.Do("POST", "/v1/score", map[string]any{"workflow": tc.workflow, "payload": tc.payload}, key).Object(t)
			delete(again, "scored_at")
			delete(j, "scored_at")
			if !reflect.DeepEqual(again, j) {
				t.Fatalf("not deterministic:\n%v\n%v", j, again)
			}
		})
	}

	r := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.reimbursement", "payload": with(denialClaim(), "units", 1)}, key).Object(t)
	reimb := r["details"].(map[string]any)["reimbursement"].(map[string]any)
	if got, want := r["score"].(float64), 1-reimb["reimbursement_ratio"].(float64); abs(got-want) > 1e-6 {
		t.Fatalf("reimbursement score %v, want 1 - ratio = %v", got, want)
	}
	if reimb["expected_allowed_amount"].(float64) <= 0 {
		t.Fatalf("expected allowed amount %v", reimb["expected_allowed_amount"])
	}
	// A reimbursement factor raises the expected ratio when its contribution is positive, and so
	// lowers the risk (score = 1 - ratio).
	factors := r["explanation"].(map[string]any)["top_factors"].([]any)
	if len(factors) == 0 {
		t.Fatal("reimbursement result without top_factors")
	}
	for _, f := range factors {
		f := f.(map[string]any)
		c := f["contribution"].(float64)
		if want := map[bool]string{true: "decreases_risk", false: "increases_risk"}[c > 0]; c != 0 && f["direction"] != want {
			t.Errorf("reimbursement factor %v: direction %v, want %s", f["feature"], f["direction"], want)
		}
	}
	// Option values are checked whatever the workflow, though only denial uses them.
	for _, o := range []map[string]any{{"operating_point": "max"}, {"distribution_profile": "medicaid"}} {
		r := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.prior_auth", "payload": denialClaim(), "options": o}, key)
		if d, _ := r.Object(t)["detail"].(string); r.Status != 422 || !strings.Contains(d, "options.") {
			t.Errorf("prior auth with options %v: %d %s, want 422 naming the option", o, r.Status, r.Body)
		}
	}
	pa := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.prior_auth", "payload": denialClaim()}, key).Object(t)
	support := pa["details"].(map[string]any)["prior_auth"].(map[string]any)["payer_support"].(map[string]any)
	if !slices.Contains([]string{"high", "moderate", "low"}, support["support_level"].(string)) {
		t.Fatalf("support level %v", support)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func TestDenialRouting(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := bearer(s.paidKey())
	denial := func(payload map[string]any, options map[string]any) map[string]any {
		t.Helper()
		body := map[string]any{"workflow": "healthcare.denial", "payload": payload}
		if options != nil {
			body["options"] = options
		}
		r := s.Do("POST", "/v1/score", body, key)
		if r.Status != 200 {
			t.Fatalf("score %v %v: %d %s", payload, options, r.Status, r.Body)
		}
		return r.Object(t)["details"].(map[string]any)["denial"].(map[string]any)
	}

	// The operating-threshold table (README "Denial routing"), every cell.
	table := map[string][3]float64{
		"synthetic_v1":    {0.21, 0.25, 0.31},
		"cms_v1":          {0.24, 0.28, 0.34},
		"commercial_beta": {0.22, 0.26, 0.32},
	}
	for profile, thresholds := range table {
		for i, op := range []string{"high_recall", "balanced", "high_precision"} {
			d := denial(denialClaim(), map[string]any{"distribution_profile": profile, "operating_point": op})
			if d["distribution_profile"] != profile || d["routing_source"] != "explicit" || d["operating_point"] != op || d["threshold"] != thresholds[i] {
				t.Errorf("%s/%s: got %v", profile, op, d)
			}
			for _, f := range []string{"denial_probability", "risk_tier", "calibration_method", "calibration_version"} {
				if _, ok := d[f]; !ok {
					t.Errorf("details.denial.%s missing: %v", f, d)
				}
			}
		}
	}
	if d := denial(denialClaim(), nil); d["operating_point"] != "balanced" {
		t.Errorf("default operating point: %v", d["operating_point"])
	}
	// The data_source hint comes second: an explicit profile beats it.
	if d := denial(with(denialClaim(), "data_source", "medicare_ffs"), nil); d["distribution_profile"] != "cms_v1" || d["routing_source"] != "data_source_hint" {
		t.Errorf("hint routing: %v", d)
	}
	if d := denial(with(denialClaim(), "data_source", "medicare_ffs"), map[string]any{"distribution_profile": "synthetic_v1"}); d["distribution_profile"] != "synthetic_v1" || d["routing_source"] != "explicit" {
		t.Errorf("explicit over hint: %v", d)
	}
	if d := denial(denialClaim(), nil); d["routing_source"] != "auto_detected" && !(d["routing_source"] == "default" && d["distribution_profile"] == "commercial_beta") {
		t.Errorf("auto routing: %v", d)
	}

	for _, tc := range []struct {
		name    string
		options map[string]any
		status  int
	}{
		{"strict unavailable pin", map[string]any{"model_version": "9.9.9", "allow_fallback": false}, 409},
		{"unknown operating point", map[string]any{"operating_point": "aggressive"}, 422},
		{"unknown profile", map[string]any{"distribution_profile": "medicare"}, 422},
	} {
		r := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": denialClaim(), "options": tc.options}, key)
		if _, ok := r.Object(t)["detail"].(string); r.Status != tc.status || !ok {
			t.Errorf("%s: got %d %s, want %d with a string detail", tc.name, r.Status, r.Body, tc.status)
		}
	}
	// A pin that is served is used; an unavailable one falls back when allowed.
	r := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": denialClaim(), "options": map[string]any{"model_version": "0.3.3", "allow_fallback": false}}, key)
	if r.Status != 200 {
		t.Errorf("served pin: %d %s", r.Status, r.Body)
	}
	r = s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": denialClaim(), "options": map[string]any{"model_version": "9.9.9"}}, key)
	if r.Status != 200 || r.Object(t)["model_version"] != "0.3.3" {
		t.Errorf("fallback pin: %d %s", r.Status, r.Body)
	}
	r = s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": with(denialClaim(), "place_of_service", "office")}, key)
	if d, _ := r.Object(t)["detail"].(string); r.Status != 422 || !strings.Contains(d, "place_of_service") {
		t.Errorf("office: %d %s", r.Status, r.Body)
	}
	if r.Header.Get("x-request-id") == "" {
		t.Error("a failed scoring call has no x-request-id")
	}
	r = s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.dental", "payload": denialClaim()}, key)
	if r.Status != 422 {
		t.Errorf("unknown workflow: %d %s", r.Status, r.Body)
	}
}

func TestDeploymentThresholdOverride(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"SCORING_DENIAL_THRESHOLD_OVERRIDE": "0.4"})
	r := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": denialClaim(), "options": map[string]any{"distribution_profile": "cms_v1"}}, bearer(s.paidKey()))
	d := r.Object(t)["details"].(map[string]any)["denial"].(map[string]any)
	if d["threshold"] != 0.4 || d["threshold_source"] != "deployment_override" {
		t.Fatalf("override: %v", d)
	}
}

func TestLegacyRoutesAndBatch(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := bearer(s.paidKey())
	for _, tc := range []struct{ path, workflow string }{
		{"/v1/claims/denial/score?operating_point=high_recall", "healthcare.denial"},
		{"/v1/claims/prior-auth/predict", "healthcare.prior_auth"},
		{"/v1/claims/reimbursement/estimate", "healthcare.reimbursement"},
	} {
		r := s.Do("POST", tc.path, with(denialClaim(), "units", 1), key)
		if r.Status != 200 || r.Object(t)["workflow"] != tc.workflow || r.Header.Get("x-request-id") == "" {
			t.Errorf("%s: %d %s", tc.path, r.Status, r.Body)
		}
	}
	// Options travel as query parameters on the legacy routes, the strict pin included.
	if r := s.Do("POST", "/v1/claims/denial/score?model_version=9.9.9&allow_fallback=false", denialClaim(), key); r.Status != 409 {
		t.Errorf("legacy strict pin: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/claims/denial/score?model_version=9.9.9", denialClaim(), key); r.Status != 200 || r.Object(t)["model_version"] != "0.3.3" {
		t.Errorf("legacy pin fallback: %d %s", r.Status, r.Body)
	}

	items := []any{
		map[string]any{"id": "a", "workflow": "healthcare.denial", "payload": denialClaim()},
		map[string]any{"id": "b", "workflow": "healthcare.denial", "payload": with(denialClaim(), "place_of_service", "office")},
		map[string]any{"id": "c", "workflow": "healthcare.prior_auth", "payload": denialClaim()},
		map[string]any{"id": "d", "workflow": "healthcare.denial", "payload": denialClaim(), "options": map[string]any{"model_version": "1.0.0", "allow_fallback": false}},
	}
	r := s.Do("POST", "/v1/score/batch", map[string]any{"items": items}, key)
	var batch struct {
		Results []struct {
			ID        string         `json:"id"`
			Status    int            `json:"status"`
			RequestID string         `json:"request_id"`
			Result    map[string]any `json:"result"`
			Error     string         `json:"error"`
			Errors    []struct {
				Field string `json:"field"`
				Rule  string `json:"rule"`
			} `json:"errors"`
		}
		Summary map[string]float64
	}
	if err := json.Unmarshal(r.Body, &batch); err != nil || r.Status != 200 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	wantStatus := []int{200, 422, 200, 409}
	for i, res := range batch.Results {
		if res.Status != wantStatus[i] {
			t.Errorf("item %s: status %d, want %d (%s)", res.ID, res.Status, wantStatus[i], res.Error)
		}
		if (res.Status == 200) != (res.RequestID != "" && res.Result != nil) {
			t.Errorf("item %s: result and request id only for successes: %+v", res.ID, res)
		}
	}
	if e := batch.Results[1].Errors; len(e) != 1 || e[0].Field != "place_of_service" || e[0].Rule != "place_of_service_code" {
		t.Errorf("item b's field errors: %+v", e)
	}
	if batch.Summary["succeeded"] != 2 || batch.Summary["failed"] != 2 || batch.Summary["billable_calls"] != 2 {
		t.Errorf("summary %v", batch.Summary)
	}
	if r := s.Do("POST", "/v1/score/batch", map[string]any{"items": []any{}}, key); r.Status != 422 {
		t.Errorf("empty batch: %d", r.Status)
	}
	// Batch items carry their own feedback keys.
	fb := s.Do("POST", "/v1/feedback", map[string]any{"request_id": batch.Results[2].RequestID, "endpoint": "prior_auth",
		"observed_outcome": "approved", "expected_outcome": "approved"}, key)
	if fb.Status != 202 {
		t.Errorf("feedback on a batch item: %d %s", fb.Status, fb.Body)
	}
}
