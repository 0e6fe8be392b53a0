package app_test

import (
	"context"
	"strings"
	"testing"
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
