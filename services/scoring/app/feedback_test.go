package app_test

import (
	"context"
	"strings"
	"testing"
)

func TestFeedback(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := s.paidKey()
	r := s.scoreDenial(key)
	rid := r.Header.Get("x-request-id")
	if r.Status != 200 || rid == "" {
		t.Fatalf("score: %d", r.Status)
	}
	fb := map[string]any{"request_id": rid, "endpoint": "denial", "observed_outcome": "denied", "expected_outcome": "paid",
		"confidence_mismatch": true, "notes": "payer cited missing modifier"}

	other := s.paidKey()
	for _, tc := range []struct {
		name string
		body map[string]any
		key  string
	}{
		{"unknown request", with(fb, "request_id", "no-such-request"), key},
		{"request id not in the form the service gave it", with(fb, "request_id", strings.ToUpper(rid)), key},
		{"endpoint mismatch", with(fb, "endpoint", "reimbursement"), key},
		{"unknown endpoint", with(fb, "endpoint", "dental"), key},
		{"unknown outcome", with(fb, "observed_outcome", "sort of"), key},
		{"ssn", with(fb, "notes", "patient SSN 123-45-6789"), key},
		{"phone", with(fb, "notes", "call back at (555) 123-4567"), key},
		{"e-mail", with(fb, "notes", "ask jane.doe@example.com"), key},
		{"date of birth", with(fb, "notes", "DOB 04/12/1961 mismatch"), key},
		{"member id", with(fb, "notes", "member id W123456789 not found"), key},
		{"long notes", with(fb, "notes", string(make([]byte, 501))), key},
		{"another account's request", fb, other},
	} {
		r := s.Do("POST", "/v1/feedback", tc.body, bearer(tc.key))
		if _, ok := r.Object(t)["detail"].(string); r.Status != 422 || !ok {
			t.Errorf("%s: got %d %s, want 422 with a string detail", tc.name, r.Status, r.Body)
		}
	}
	usageBefore := s.Do("GET", "/v1/usage", nil, bearer(key)).Object(t)["billable_calls"]
	r = s.Do("POST", "/v1/feedback", fb, bearer(key))
	body := r.Object(t)
	if r.Status != 202 || body["status"] != "accepted" || body["billable"] != false || body["request_id"] != rid {
		t.Fatalf("feedback: %d %s", r.Status, r.Body)
	}
	if after := s.Do("GET", "/v1/usage", nil, bearer(key)).Object(t)["billable_calls"]; after != usageBefore {
		t.Fatalf("feedback billed: %v -> %v", usageBefore, after)
	}

	// A request older than the retention window is expired.
	var keyID, accountID string
	if err := s.Pool.QueryRow(context.Background(), `SELECT key_id, account_id FROM request_records WHERE request_id = $1`, rid).Scan(&keyID, &accountID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO request_records (request_id, key_id, account_id, endpoint, route_id, model_version, scored_at)
VALUES ('old-request', $1, $2, 'denial', 'unified_score', '0.3.3', now() - interval '91 days')`, keyID, accountID); err != nil {
		t.Fatal(err)
	}
	if r := s.Do("POST", "/v1/feedback", with(fb, "request_id", "old-request"), bearer(key)); r.Status != 422 {
		t.Fatalf("expired request: %d %s", r.Status, r.Body)
	}
}
