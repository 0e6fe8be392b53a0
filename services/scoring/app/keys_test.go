package app_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

func TestKeysAndTokens(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	for _, h := range []map[string]string{nil, {"X-Admin-Token": "wrong-token-of-some-length"}} {
		if r := s.Do("POST", "/v1/apikeys/issue", map[string]any{}, h); r.Status != 401 {
			t.Fatalf("issue without the admin token: %d", r.Status)
		}
		if r := s.Do("POST", "/v1/tokens/issue", map[string]any{"subject": "x"}, h); r.Status != 401 {
			t.Fatalf("token without the admin token: %d", r.Status)
		}
	}
	r := s.Do("POST", "/v1/apikeys/issue", map[string]any{"plan": "platinum"}, admin)
	if r.Status != 422 {
		t.Fatalf("unknown plan: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/apikeys/issue", map[string]any{"scopes": []string{"admin"}}, admin); r.Status != 422 {
		t.Fatalf("unknown key scope: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/tokens/issue", map[string]any{"subject": "x", "scopes": []string{"admin"}}, admin); r.Status != 422 {
		t.Fatalf("unknown token scope: %d %s", r.Status, r.Body)
	}
	r = s.Do("POST", "/v1/keys/trial", nil, nil)
	trial := r.Object(t)
	if r.Status != 201 || trial["plan"] != "trial" || !strings.HasPrefix(trial["api_key"].(string), trial["key_prefix"].(string)) {
		t.Fatalf("trial: %d %s", r.Status, r.Body)
	}
	// Only the hash is stored.
	var n int
	if err := s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM api_keys WHERE key_hash = $1 OR prefix = $1`, trial["api_key"]).Scan(&n); err != nil || n != 0 {
		t.Fatalf("secret stored in clear: %d %v", n, err)
	}

	r = s.Do("POST", "/v1/tokens/issue", map[string]any{"subject": "claims-worker", "ttl_seconds": 600}, admin)
	tok := r.Object(t)
	if r.Status != 201 || tok["token_type"] != "Bearer" || strings.Count(tok["access_token"].(string), ".") != 2 {
		t.Fatalf("token: %d %s", r.Status, r.Body)
	}
	jwt := tok["access_token"].(string)
	if r := s.scoreDenial(jwt); r.Status != 200 {
		t.Fatalf("score with the JWT: %d %s", r.Status, r.Body)
	}
	tampered := jwt[:len(jwt)-4] + "AAAA"
	if r := s.Do("GET", "/v1/workflows", nil, bearer(tampered)); r.Status != 401 {
		t.Fatalf("tampered JWT: %d", r.Status)
	}
	if r := s.Do("POST", "/v1/tokens/issue", map[string]any{"subject": "x", "ttl_seconds": 10}, admin); r.Status != 422 {
		t.Fatalf("short ttl: %d", r.Status)
	}
	// The hosted-agent header works like the bearer.
	if r := s.Do("GET", "/v1/workflows", nil, map[string]string{"x-service-api-key": trial["api_key"].(string)}); r.Status != 200 {
		t.Fatalf("x-service-api-key: %d", r.Status)
	}
}

// TestTrialKeyLimits mints trial keys past the per-address and the overall bound: 429 with
// Retry-After and the throttle's body; X-Forwarded-For counts only behind a trusted proxy.
func TestTrialKeyLimits(t *testing.T) {
	t.Parallel()
	refused := func(t *testing.T, r servicetest.Reply, what string) {
		t.Helper()
		body := r.Object(t)
		secs, _ := body["retry_after_seconds"].(float64)
		if r.Status != 429 || r.Header.Get("Retry-After") == "" || secs < 1 || body["detail"] == nil {
			t.Fatalf("%s: %d %s (Retry-After %q), want 429 with Retry-After and retry_after_seconds", what, r.Status, r.Body, r.Header.Get("Retry-After"))
		}
		if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 3000 || ra > 3600 || float64(ra) != secs {
			t.Fatalf("%s: Retry-After %q, body %v, want the same seconds within the hour", what, r.Header.Get("Retry-After"), secs)
		}
	}
	mint := func(s *stack, from string) servicetest.Reply {
		var h map[string]string
		if from != "" {
			h = map[string]string{"X-Forwarded-For": from}
		}
		return s.Do("POST", "/v1/keys/trial", nil, h)
	}

	t.Run("per address, no trusted proxy", func(t *testing.T) {
		t.Parallel()
		s := startService(t, map[string]string{"SCORING_TRIAL_KEYS_PER_ADDRESS": "2"})
		for i := range 2 {
			if r := mint(s, ""); r.Status != 201 {
				t.Fatalf("trial key %d: %d %s", i+1, r.Status, r.Body)
			}
		}
		refused(t, mint(s, ""), "third trial key")
		// Without SCORING_TRUSTED_PROXY_HOPS a client-written X-Forwarded-For is not believed.
		refused(t, mint(s, "198.51.100.9"), "third trial key with a forged X-Forwarded-For")
		// Other keys are not limited by it.
		s.paidKey()
	})

	t.Run("per address and overall, behind a proxy", func(t *testing.T) {
		t.Parallel()
		s := startService(t, map[string]string{"SCORING_TRUSTED_PROXY_HOPS": "1",
			"SCORING_TRIAL_KEYS_PER_ADDRESS": "2", "SCORING_TRIAL_KEYS_PER_HOUR": "3"})
		for i := range 2 {
			if r := mint(s, "203.0.113.7"); r.Status != 201 {
				t.Fatalf("trial key %d: %d %s", i+1, r.Status, r.Body)
			}
		}
		refused(t, mint(s, "203.0.113.7"), "third trial key of one address")
		if r := mint(s, "203.0.113.8"); r.Status != 201 {
			t.Fatalf("another address: %d %s, want 201", r.Status, r.Body)
		}
		refused(t, mint(s, "203.0.113.9"), "a trial key past the overall bound")
		var n int
		if err := s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM auth_attempts WHERE subject LIKE '%203.0.113%'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("client addresses stored in clear: %d %v", n, err)
		}
	})
}
