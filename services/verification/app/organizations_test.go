package app_test

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOrganizationsAndKeys(t *testing.T) {
	t.Parallel()
	s := startService(t)

	for _, h := range []map[string]string{nil, {"X-Admin-Token": "wrong-token-0123456789"}} {
		r := s.call("POST", "/v1/intelligence/organizations", map[string]any{"name": "Acme"}, h)
		if d, ok := r.obj(t)["detail"].(string); r.status != 401 || !ok || d == "" {
			t.Errorf("create organization with %v: got %d %s, want 401 with a string detail", h, r.status, r.body)
		}
	}
	for _, body := range []map[string]any{{}, {"name": "  "}, {"name": strings.Repeat("x", 201)}} {
		r := s.call("POST", "/v1/intelligence/organizations", body, admin)
		var v struct {
			Detail []struct {
				Loc []any `json:"loc"`
			} `json:"detail"`
		}
		if r.status != 422 || json.Unmarshal(r.body, &v) != nil || len(v.Detail) != 1 || v.Detail[0].Loc[1] != "name" {
			t.Errorf("create organization %v: got %d %s, want 422 locating body.name", body, r.status, r.body)
		}
	}

	org := s.call("POST", "/v1/intelligence/organizations", map[string]any{"name": "Acme Health"}, admin)
	if org.status != 201 || org.obj(t)["name"] != "Acme Health" || org.obj(t)["id"] == "" {
		t.Fatalf("create organization: %d %s", org.status, org.body)
	}
	orgID := org.obj(t)["id"].(string)
	keys := "/v1/intelligence/organizations/" + orgID + "/api-keys"

	issued := s.call("POST", keys, map[string]any{"name": "ci"}, admin)
	k := issued.obj(t)
	secret, _ := k["api_key"].(string)
	if issued.status != 201 || !strings.HasPrefix(secret, "vk_") || len(secret) < 40 || !strings.HasPrefix(secret, k["prefix"].(string)) {
		t.Fatalf("issue key: %d %s", issued.status, issued.body)
	}
	var stored string
	if err := s.pool.QueryRow(t.Context(), `SELECT key_hash FROM api_keys WHERE id = $1`, k["id"]).Scan(&stored); err != nil || strings.Contains(stored, secret) || len(stored) != 64 {
		t.Errorf("stored key: %q %v, want only a SHA-256 hash", stored, err)
	}

	list := s.call("GET", keys, nil, admin)
	var items []map[string]any
	if err := json.Unmarshal(list.body, &items); list.status != 200 || err != nil || len(items) != 1 {
		t.Fatalf("list keys: %d %s, want a JSON array of one key", list.status, list.body)
	}
	if strings.Contains(string(list.body), secret) || items[0]["revoked"] != false || items[0]["name"] != "ci" {
		t.Errorf("list keys: %s", list.body)
	}
	if r := s.call("GET", keys, nil, nil); r.status != 401 {
		t.Errorf("list keys without admin token: got %d, want 401", r.status)
	}

	who := s.call("GET", "/v1/intelligence/whoami", nil, bearer(secret))
	if w := who.obj(t); who.status != 200 || w["organization_id"] != orgID || w["organization_name"] != "Acme Health" || w["api_key_id"] != k["id"] {
		t.Fatalf("whoami: %d %s", who.status, who.body)
	}
	for name, h := range map[string]map[string]string{
		"no header":        nil,
		"not bearer":       {"Authorization": "Basic dXNlcjpwYXNz"},
		"unknown key":      bearer("vk_" + strings.Repeat("A", 43)),
		"not a key at all": bearer("hello"),
	} {
		r := s.call("GET", "/v1/intelligence/whoami", nil, h)
		if d, ok := r.obj(t)["detail"].(string); r.status != 401 || !ok || d == "" {
			t.Errorf("whoami with %s: got %d %s, want 401 with a string detail", name, r.status, r.body)
		}
	}

	// Revocation works at once; revoking again is fine; unknown ids are 404.
	if r := s.call("DELETE", keys+"/"+k["id"].(string), nil, admin); r.status != 204 || len(r.body) != 0 {
		t.Fatalf("revoke: %d %s, want 204 with no body", r.status, r.body)
	}
	if r := s.call("GET", "/v1/intelligence/whoami", nil, bearer(secret)); r.status != 401 {
		t.Errorf("whoami with a revoked key: got %d, want 401", r.status)
	}
	if r := s.call("DELETE", keys+"/"+k["id"].(string), nil, admin); r.status != 204 {
		t.Errorf("second revoke: got %d, want 204", r.status)
	}
	list = s.call("GET", keys, nil, admin)
	_ = json.Unmarshal(list.body, &items)
	if items[0]["revoked"] != true || items[0]["revoked_at"] == nil {
		t.Errorf("revoked key listed as %v", items[0])
	}
	for _, path := range []string{
		keys + "/0190a0b0-0000-7000-8000-000000000000",
		keys + "/not-a-uuid",
		"/v1/intelligence/organizations/0190a0b0-0000-7000-8000-000000000000/api-keys",
	} {
		method := "DELETE"
		if strings.HasSuffix(path, "api-keys") {
			method = "GET"
		}
		if r := s.call(method, path, nil, admin); r.status != 404 {
			t.Errorf("%s %s: got %d %s, want 404", method, path, r.status, r.body)
		}
	}
	if r := s.call("POST", "/v1/intelligence/organizations/0190a0b0-0000-7000-8000-000000000000/api-keys", map[string]any{}, admin); r.status != 404 {
		t.Errorf("issue a key for an unknown organization: got %d, want 404", r.status)
	}
}

func TestKeysAreScopedToTheirOrganization(t *testing.T) {
	t.Parallel()
	s := startService(t)
	orgA, keyA := s.newKey("A")
	orgB, _ := s.newKey("B")
	who := s.call("GET", "/v1/intelligence/whoami", nil, bearer(keyA)).obj(t)
	if who["organization_id"] != orgA {
		t.Fatalf("whoami: got %v, want organization %s", who, orgA)
	}
	var keyID string
	if err := s.pool.QueryRow(t.Context(), `SELECT id::text FROM api_keys WHERE organization_id = $1`, orgA).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	// Revoking A's key through B's path finds nothing.
	if r := s.call("DELETE", "/v1/intelligence/organizations/"+orgB+"/api-keys/"+keyID, nil, admin); r.status != 404 {
		t.Errorf("revoke another organization's key: got %d, want 404", r.status)
	}
	if r := s.call("GET", "/v1/intelligence/whoami", nil, bearer(keyA)); r.status != 200 {
		t.Errorf("key still works: got %d", r.status)
	}
}
