package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTrialLimits(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := s.trialKey()

	// Burst 5, then 1 request per second: of 8 immediate calls, the 6th on are refused.
	var statuses []int
	for range 8 {
		statuses = append(statuses, s.scoreDenial(key).Status)
	}
	ok, limited := 0, 0
	for _, st := range statuses {
		switch st {
		case 200:
			ok++
		case 429:
			limited++
		}
	}
	if ok > 5 || ok < 4 || limited < 3 {
		t.Fatalf("8 immediate calls: got %v, want at most 5 successes and the rest 429", statuses)
	}
	r := s.scoreDenial(key)
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("throttled call: %d (Retry-After %q), want 429 with Retry-After", r.Status, r.Header.Get("Retry-After"))
	}
	if _, ok := r.Object(t)["detail"].(string); !ok {
		t.Fatalf("429 body %s", r.Body)
	}
	// Limits and usage are not scoring calls: not throttled, not billed.
	lim := s.Do("GET", "/v1/limits", nil, bearer(key))
	l := lim.Object(t)
	if lim.Status != 200 || l["plan"] != "trial" || l["requests_per_second"] != 1.0 || l["burst"] != 5.0 ||
		l["max_in_flight"] != 1.0 || l["monthly_included_calls"] != 1000.0 || l["hard_quota"] != true || l["scope"] != "per_key" {
		t.Fatalf("limits: %d %s", lim.Status, lim.Body)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := s.scoreDenial(key); r.Status != 200 {
		t.Fatalf("after a second: %d %s", r.Status, r.Body)
	}

	// Near the end of the quota: 999 calls already this month, one more passes, then 402.
	month := time.Now().UTC().Format("2006-01")
	key2 := s.trialKey()
	var keyID string
	if err := s.Pool.QueryRow(context.Background(), `SELECT id FROM api_keys WHERE prefix = $1`, key2[:len("trial_")+8]).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO usage_counters (key_id, period, calls, updated_at) VALUES ($1, $2, 999, now())`, keyID, month); err != nil {
		t.Fatal(err)
	}
	// A batch larger than what is left is refused whole, and the answer says how much is left.
	two := map[string]any{"items": []any{
		map[string]any{"workflow": "healthcare.denial", "payload": denialClaim()},
		map[string]any{"workflow": "healthcare.denial", "payload": denialClaim()},
	}}
	r = s.Do("POST", "/v1/score/batch", two, bearer(key2))
	if body := r.Object(t); r.Status != 402 || body["remaining_calls"] != 1.0 || !strings.Contains(body["detail"].(string), "1 of its 1,000 calls left") {
		t.Fatalf("batch of 2 with 1 call left: %d %s", r.Status, r.Body)
	}
	// That refusal cost no rate-limit token: the last call passes at once.
	if r := s.scoreDenial(key2); r.Status != 200 {
		t.Fatalf("1000th call: %d %s", r.Status, r.Body)
	}
	time.Sleep(1100 * time.Millisecond)
	r = s.scoreDenial(key2)
	body := r.Object(t)
	if r.Status != 402 || !strings.HasSuffix(body["upgrade_url"].(string), "/v1/billing/checkout-session") {
		t.Fatalf("1001st call: %d %s, want 402 with upgrade_url", r.Status, r.Body)
	}
	if d, _ := body["detail"].(string); !strings.Contains(d, "Trial quota of 1,000 scoring calls this month is exhausted") ||
		body["error"] != "quota_exhausted" || body["remaining_calls"] != nil {
		t.Fatalf("402 at the quota: %s", r.Body)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := s.Do("POST", "/v1/score/batch", two, bearer(key2)); r.Status != 402 || r.Object(t)["upgrade_url"] == nil {
		t.Fatalf("batch past the quota: %d %s", r.Status, r.Body)
	}
	u := s.Do("GET", "/v1/usage", nil, bearer(key2)).Object(t)
	if u["billable_calls"] != 1000.0 || u["remaining_included_calls"] != 0.0 || u["meter"] != "scoring_calls" || u["consistency"] != "eventual" {
		t.Fatalf("usage at quota: %v", u)
	}
}

func TestPaidKeyIsNotHeldToTrialLimits(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := s.paidKey()
	for i := range 20 {
		if r := s.scoreDenial(key); r.Status != 200 {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
}

// TestUsageSurvivesRestart scores concurrently, stops the service gracefully right after the last
// answer (well within the flush interval) and starts it again on the same database: every call is
// still metered, and its request record still takes feedback.
func TestUsageSurvivesRestart(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"SCORING_USAGE_FLUSH_INTERVAL": "1m"})
	s := startWithEnv(t, env)
	key := s.paidKey()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for range 4 {
		wg.Go(func() {
			for range 10 {
				r := s.scoreDenial(key)
				if r.Status != 200 {
					t.Errorf("score: %d %s", r.Status, r.Body)
					return
				}
				mu.Lock()
				ids = append(ids, r.Header.Get("x-request-id"))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.Stop()

	s2 := startWithEnv(t, env)
	u := s2.Do("GET", "/v1/usage", nil, bearer(key)).Object(t)
	if u["billable_calls"] != 40.0 {
		t.Fatalf("usage after restart: %v, want 40 billable calls", u["billable_calls"])
	}
	fb := s2.Do("POST", "/v1/feedback", map[string]any{"request_id": ids[len(ids)-1], "endpoint": "denial",
		"observed_outcome": "paid", "expected_outcome": "paid"}, bearer(key))
	if fb.Status != 202 {
		t.Fatalf("feedback after restart: %d %s", fb.Status, fb.Body)
	}
}
